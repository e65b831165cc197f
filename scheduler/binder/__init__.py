"""The binder: turns the scheduler's BindRequests into pod bindings.

Why a separate component: KAI's scheduler never binds; it records decisions as
BindRequests and a binder performs them, so a slow API server never stalls a
scheduling cycle. ``decide`` holds the rules, ``reconciler`` the API calls.
"""
