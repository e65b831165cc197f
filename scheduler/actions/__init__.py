"""Actions of a cycle; each acts on the session only through Statements."""
