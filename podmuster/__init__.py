"""podmuster: gang scheduling with hierarchical fair share for AI and batch workloads.

This package holds the command-line interface and the wiring between the
scheduler engine (``scheduler``), the podgrouper (``podgrouper``), the framework
adapters (``integrations``) and the Kubernetes API types (``crds``).
"""

__version__ = "0.1.0"
