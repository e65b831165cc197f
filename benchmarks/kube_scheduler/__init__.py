"""The anchor benchmark: kube-scheduler on a real control plane with fake nodes.

Run it with ``.venv/bin/python -m benchmarks.kube_scheduler`` after
``bash tests/controlplane/build.sh``. It is not part of the test run.
"""
