# syntax=docker/dockerfile:1
# kafka-placement-operator image: multi-stage, non-root (uid 10001), read-only-root-fs friendly.
#   docker build -t kafka-placement-operator:0.1.0 .
# The runtime stage carries a headless JRE 17 for the Spark planner engines (local[*] and the
# spark-k8s driver); everything writable lives under /tmp (an emptyDir in the chart).

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# ---- deps: wheels of the dependencies, from pyproject.toml alone --------------------------------
# A stage of its own, so that a change to operator/ reuses it and the runtime's layer built from it: a
# rebuild after a code change downloads, builds and installs nothing but the project's own wheel.
FROM ${PYTHON_IMAGE} AS deps
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY pyproject.toml ./
RUN mkdir /deps \
    && python3 -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"], sep="\n")' \
        > /deps/requirements.txt \
    && pip wheel --no-cache-dir --wheel-dir /deps -r /deps/requirements.txt

# ---- builder: the project's own wheel (on the deps stage: its settings and pyproject.toml) -------
FROM deps AS builder
# the sources only: the README and docs/ are not in the build context (.dockerignore)
COPY operator/ operator/
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

# ---- runtime ------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS runtime
LABEL org.opencontainers.image.title="kafka-placement-operator" \
      org.opencontainers.image.description="Keeps Kafka replica placement where custom resources declare it" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HOME=/tmp \
    TMPDIR=/tmp \
    JAVA_HOME=/usr/lib/jvm/java-17-openjdk \
    SPARK_LOCAL_DIRS=/tmp/spark \
    PYSPARK_PYTHON=python3
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# hadolint ignore=DL3008
RUN apt-get update \
    && mkdir -p /usr/share/man/man1 \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
    && ln -s "$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")" "${JAVA_HOME}" \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt /var/log/dpkg.log \
    && groupadd --gid 10001 kafka-placement \
    && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /tmp --shell /usr/sbin/nologin kafka-placement
RUN --mount=type=bind,from=deps,source=/deps,target=/deps \
    pip install --no-cache-dir --no-index --find-links=/deps -r /deps/requirements.txt
# the project itself, its dependencies checked against what the layer above installed
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    pip install --no-cache-dir --no-index --no-deps /wheels/kafka_placement_operator-*.whl \
    && pip check
# the Spark job's entry point where a SparkApplication's mainApplicationFile expects it (spark/k8s.py)
COPY operator/kafka_placement/spark/job.py /opt/kafka-placement/job.py
USER 10001:10001
WORKDIR /tmp
EXPOSE 9090
ENTRYPOINT ["kafka-placement"]
CMD ["operator", "--all-namespaces"]
