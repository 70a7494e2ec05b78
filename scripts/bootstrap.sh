#!/usr/bin/env bash
# Prepares a machine for tidemark: a project virtualenv with the project installed, Java >= 17, Maven and
# the real-Ignite and real-Hazelcast harnesses built with it, and chromium (the test suite renders the HTML report in it).
# Idempotent and quick when nothing changed (the install is keyed on pyproject.toml's hash).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
python="${PYTHON:-python3}"

java_major() {
    # `java -version` prints e.g. 'openjdk version "17.0.15" 2025-04-15' (or "1.8.0_392" for Java 8).
    java -version 2>&1 | awk -F'"' '/version/ {split($2, v, "."); print (v[1] == "1" ? v[2] : v[1]); exit}'
}

have_jdk() {
    command -v java >/dev/null 2>&1 && command -v javac >/dev/null 2>&1 && [ "$(java_major)" -ge 17 ] 2>/dev/null
}

ensure_java() {
    if have_jdk; then
        return
    fi
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
        echo "bootstrap: Java >= 17 not found; installing a headless JDK with apt-get" >&2
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jdk-headless >/dev/null
        if have_jdk; then
            return
        fi
    fi
    echo "bootstrap: tidemark needs Java (JDK) >= 17 on PATH (TLC, Spark, and javac for the affinity test vectors)." >&2
    echo "           Install a JDK 17+ (e.g. 'apt-get install openjdk-17-jdk-headless') and retry." >&2
    exit 3
}

ensure_chromium() {
    # The report test renders the HTML report in a real headless browser: Debian's chromium.
    if command -v chromium >/dev/null 2>&1; then
        return
    fi
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
        echo "bootstrap: chromium not found; installing Debian's chromium with apt-get" >&2
        # A failed install falls through to the warning below rather than stopping `make run`.
        DEBIAN_FRONTEND=noninteractive apt-get update -qq || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null || true
        if command -v chromium >/dev/null 2>&1; then
            return
        fi
    fi
    # Only a warning: the main job does not need a browser; the report test fails saying the same.
    echo "bootstrap: warning: the test suite needs chromium on PATH (tests/test_verify_report.py renders" >&2
    echo "           the HTML report in it); install it, e.g. 'apt-get install chromium'." >&2
}

ensure_venv() {
    if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
        echo "bootstrap: tidemark needs Python >= 3.11 ('$python' is older); set PYTHON=python3.11" >&2
        exit 3
    fi
    [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
    stamp="$venv/.tidemark-installed"
    want="$(sha256sum "$root/pyproject.toml" | cut -d' ' -f1)"
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
        echo "bootstrap: installing tidemark and its dependencies into .venv" >&2
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e "$root[dev]"
        echo "$want" > "$stamp"
    fi
}

ensure_maven() {
    # The real-system harnesses (systems/ignite, systems/hazelcast) are Maven modules.
    if command -v mvn >/dev/null 2>&1; then
        return
    fi
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
        echo "bootstrap: Maven not found; installing it with apt-get" >&2
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven >/dev/null
        if command -v mvn >/dev/null 2>&1; then
            return
        fi
    fi
    echo "bootstrap: tidemark needs Maven (mvn) to build the real-system harnesses; install it (apt-get install maven)." >&2
    exit 3
}

build_harnesses() {
    # Each skipped when its jar is newer than the module's sources; Maven's repository is .cache/m2, so only
    # the first build downloads (Ignite 2.18.0, Hazelcast 5.7.0 and their dependencies from Maven Central).
    "$venv/bin/python" -c 'import sys
from tidemark.conformance.errors import ToolError
from tidemark.conformance.systems import hazelcast, ignite
try:
    ignite.build_harness()
    hazelcast.build_harness()
except ToolError as e:
    sys.exit(f"bootstrap: {e.describe()}")' || exit 3
}

ensure_java
ensure_maven
ensure_chromium
ensure_venv
build_harnesses
