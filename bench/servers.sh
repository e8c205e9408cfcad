# The servers the benches that build the demo run beside it, on 127.0.0.1 (sourced by
# bench/pipeline.sh, bench/registry_cache.sh and bench/fleet.sh): the fixture mirror (MOFED's
# and NVIDIA's stand-ins, served by `imgbuild mirror serve`) and Debian's docker-registry, whose
# repository holds the layer cache the builds share.
# The caller sets repo (the checkout), imgbuild (the binary), work (its scratch folder) and a
# pids array, to which each server's pid is added for the caller's cleanup.

# free_port: a TCP port of 127.0.0.1 nothing listens on.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_mirror: makes the fixture mirror in $work/mirror and serves it; sets mirror_port.
start_mirror() {
    bash "$repo/tests/fixtures/installers/make-mirror.sh" "$work/mirror" >/dev/null
    mirror_port=$(free_port)
    "$imgbuild" mirror serve "$work/mirror" --addr "127.0.0.1:$mirror_port" >/dev/null &
    pids+=($!)
}

# start_registry: serves a docker-registry from $work/registry; sets registry_port and
# cache_repo (the layer cache's repository in it).
start_registry() {
    registry_port=$(free_port)
    cat > "$work/registry.yml" <<YML
version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: $work/registry
http:
  addr: 127.0.0.1:$registry_port
YML
    docker-registry serve "$work/registry.yml" >/dev/null 2>&1 &
    pids+=($!)
    sleep 1
    # shellcheck disable=SC2034 # used by the scripts that source this one
    cache_repo=docker://127.0.0.1:$registry_port/site/layer-cache
}
