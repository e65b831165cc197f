# syntax=docker/dockerfile:1
# The podmuster image the Helm chart runs: `podmuster run <component>`.
#
# Two stages: the first installs podmuster and its live dependencies (kopf, aiohttp) into
# a virtual environment, the second copies only that environment onto a slim Python base
# and runs as an unprivileged user. Nothing in the final image writes to its own root
# filesystem (the chart mounts it read-only and gives /tmp as an emptyDir).
#
# This repository publishes no image: build it, push it to a registry your cluster can
# pull from, and point the chart at it (docs/install.md, "Image"):
#
#   docker build -t registry.example.com/platform/podmuster:0.1.0 .
#   docker push registry.example.com/platform/podmuster:0.1.0
#   helm install podmuster charts/podmuster -n podmuster-system --create-namespace \
#     --set image.repository=registry.example.com/platform/podmuster --set image.tag=0.1.0
#
# .dockerignore lets only pyproject.toml, README.md and the packages copied below into the
# build context; tests/chart/test_image.py keeps the three lists the same.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/podmuster
WORKDIR /src
# Dependencies first, so a change to the code reuses the dependency layer.
COPY pyproject.toml README.md ./
RUN /opt/podmuster/bin/pip install --upgrade pip \
    && /opt/podmuster/bin/python -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; print('\n'.join(p['dependencies'] + p['optional-dependencies']['live']))" > /tmp/requirements.txt \
    && /opt/podmuster/bin/pip install -r /tmp/requirements.txt
COPY podmuster ./podmuster
COPY simulator ./simulator
COPY scheduler ./scheduler
COPY podgrouper ./podgrouper
COPY integrations ./integrations
COPY crds ./crds
COPY kubeapi ./kubeapi
COPY webhooks ./webhooks
COPY liveprocess ./liveprocess
RUN /opt/podmuster/bin/pip install --no-deps . \
    && /opt/podmuster/bin/python -m compileall -q /opt/podmuster \
    && /opt/podmuster/bin/podmuster --version

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="podmuster" \
      org.opencontainers.image.description="KAI-Scheduler-compatible gang scheduling with hierarchical fair share" \
      org.opencontainers.image.licenses="Apache-2.0"
# 65532 matches the chart's runAsUser; no shell login, no home directory to write to.
RUN groupadd --system --gid 65532 podmuster \
    && useradd --system --uid 65532 --gid 65532 --no-create-home --shell /usr/sbin/nologin podmuster
COPY --from=build /opt/podmuster /opt/podmuster
ENV PATH=/opt/podmuster/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["podmuster"]
CMD ["--help"]
