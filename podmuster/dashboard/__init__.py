"""``podmuster run dashboard``: a web page with the queue tree, waiting gangs and evictions.

Why this package exists: users of a shared GPU cluster ask "why does my job wait, and
who holds the GPUs"; the answers are scattered over Queue status, PodGroup conditions
and Events. The dashboard shows them on one page, live from the API server, read
through the scheduler's own informers (:mod:`podmuster.cluster_watch`).
"""
