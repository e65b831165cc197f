"""Status controllers: PodGroup ``resourcesStatus`` and Queue ``status``.

Why: users and the time-based fair share read what each gang and each queue
subtree asks for and holds from the objects themselves (KAI's
podgroupcontroller and queuecontroller). The arithmetic is pure
(``podgroup_status``, ``queue_status``); ``reconciler`` watches and patches.
"""
