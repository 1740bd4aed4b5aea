#!/usr/bin/env bash
# Validates compose.yaml, compose.yaml + compose.prod.yaml, and each with compose.observability.yaml
# on top, with a real Compose parser
# (docker-compose 1.29, Debian's package; no Docker engine needed), then asserts the rules
# infra/README.md promises on the *rendered* configuration, using python3 + PyYAML (both come
# with docker-compose). Run from anywhere; `pnpm test` runs it from the repo root.
# Prints one line per check and a final "compose: N passed, M failed".
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v docker-compose >/dev/null 2>&1; then
  echo "check-compose: docker-compose not found. Install it: apt-get install -y docker-compose" >&2
  exit 1
fi

tmp=$(mktemp -d)
created_env_prod=""
cleanup() {
  rm -rf "$tmp"
  if [[ -n $created_env_prod ]]; then rm -f .env.prod; fi
}
trap cleanup EXIT

# compose.prod.yaml reads `env_file: .env.prod`; validate against the documented example unless
# a real one exists (then that one is validated, and left untouched).
if [[ ! -f .env.prod ]]; then
  cp infra/prod.env.example .env.prod
  created_env_prod=1
fi
export JARVIS_DOMAIN="${JARVIS_DOMAIN:-jarvis.example.com}"
export ACME_EMAIL="${ACME_EMAIL:-admin@example.com}"

local_cfg=(-f compose.yaml)
prod_cfg=(--env-file .env.prod -f compose.yaml -f compose.prod.yaml)
# Rendered (merged, interpolated) configs for the structural checks; empty if rendering failed.
docker-compose "${local_cfg[@]}" config >"$tmp/local.yaml" 2>/dev/null || : >"$tmp/local.yaml"
docker-compose "${prod_cfg[@]}" config >"$tmp/prod.yaml" 2>/dev/null || : >"$tmp/prod.yaml"

# The observability overlay (compose.observability.yaml) requires Grafana's admin password and the
# admin key it sends alerts with; dummies here, and each one's absence must stop the render.
obs_env=(env GF_SECURITY_ADMIN_PASSWORD=check-compose-dummy JARVIS_ADMIN_KEY=check-compose-dummy-admin-key-0123456789)
obs_cfg=(-f compose.yaml -f compose.observability.yaml)
prod_obs_cfg=(--env-file .env.prod -f compose.yaml -f compose.prod.yaml -f compose.observability.yaml)
"${obs_env[@]}" docker-compose "${obs_cfg[@]}" config >"$tmp/obs.yaml" 2>/dev/null || : >"$tmp/obs.yaml"
"${obs_env[@]}" docker-compose "${prod_obs_cfg[@]}" config >"$tmp/prod-obs.yaml" 2>/dev/null || : >"$tmp/prod-obs.yaml"

pass=0
fail=0
# check "description" command...: the command's output is appended on success, indented on failure.
check() {
  local desc=$1 out
  shift
  if out=$("$@" 2>&1); then
    pass=$((pass + 1))
    printf 'ok   %s%s\n' "$desc" "${out:+ ($out)}"
  else
    fail=$((fail + 1))
    printf 'FAIL %s\n' "$desc"
    if [[ -n $out ]]; then printf '%s\n' "$out" | sed 's/^/       /'; fi
  fi
}

# Each production variable guarded by ${VAR:?} must make compose refuse to render without it.
requires_prod_vars() {
  local var rc out
  for var in JARVIS_DOMAIN ACME_EMAIL POSTGRES_PASSWORD; do
    grep -v "^$var=" infra/prod.env.example >"$tmp/missing.env"
    rc=0
    out=$(env -u JARVIS_DOMAIN -u ACME_EMAIL -u POSTGRES_PASSWORD \
      docker-compose --env-file "$tmp/missing.env" -f compose.yaml -f compose.prod.yaml config -q 2>&1) || rc=$?
    if [[ $rc -eq 0 || $out != *"$var"* ]]; then
      echo "rendered without $var (rc=$rc): $out"
      return 1
    fi
  done
}

# Grafana must never come up with a default password, nor without the key its alerts need: the
# overlay refuses to render when either is missing (an empty --env-file: a .env that sets them
# must not hide the guard).
requires_obs_vars() {
  local var rc out other
  : >"$tmp/empty.env"
  for var in GF_SECURITY_ADMIN_PASSWORD JARVIS_ADMIN_KEY; do
    # The other one set: the render must fail on this one alone.
    other=GF_SECURITY_ADMIN_PASSWORD
    [[ $var == "$other" ]] && other=JARVIS_ADMIN_KEY
    rc=0
    out=$(env -u GF_SECURITY_ADMIN_PASSWORD -u JARVIS_ADMIN_KEY "$other=check-compose-dummy-0123456789" \
      docker-compose --env-file "$tmp/empty.env" "${obs_cfg[@]}" config -q 2>&1) || rc=$?
    if [[ $rc -eq 0 || $out != *"$var"* ]]; then
      echo "rendered without $var (rc=$rc): $out"
      return 1
    fi
  done
}

# Prometheus's own parser on what Grafana and Prometheus will run: the scrape configuration, and
# the PromQL of the alert rules and of Tempo's trace-to-metrics links (as recording rules, the
# form promtool checks; Grafana's $$ is a $, and $__tags the span's service).
promtool_checks() {
  if ! command -v promtool >/dev/null 2>&1; then
    echo "promtool not found. Install it: apt-get install -y prometheus"
    return 1
  fi
  local out
  out=$(promtool check config --syntax-only infra/observability/prometheus/prometheus.yml 2>&1) ||
    { echo "$out"; return 1; }
  python3 - "$tmp/promql-rules.yaml" <<'PROMQL' || return 1
import sys, yaml
base = "infra/observability/grafana/provisioning"
exprs = []
for group in (yaml.safe_load(open(f"{base}/alerting/rules.yaml")) or {}).get("groups") or []:
    for rule in group.get("rules") or []:
        for query in rule.get("data") or []:
            if query.get("datasourceUid") == "prometheus":
                exprs.append((rule["uid"], query["model"]["expr"]))
for ds in (yaml.safe_load(open(f"{base}/datasources/datasources.yaml")) or {}).get("datasources") or []:
    for query in ((ds.get("jsonData") or {}).get("tracesToMetrics") or {}).get("queries") or []:
        exprs.append((query["name"], query["query"].replace("$$", "$").replace("$__tags", 'service="x"')))
if len(exprs) < 5:
    sys.exit(f"only {len(exprs)} PromQL queries found")
rules = [{"record": f"check:query_{i}", "expr": expr} for i, (_, expr) in enumerate(exprs)]
yaml.safe_dump({"groups": [{"name": "check", "rules": rules}]}, open(sys.argv[1], "w"))
PROMQL
  out=$(promtool check rules "$tmp/promql-rules.yaml" 2>&1) || { echo "$out"; return 1; }
  echo "$(promtool --version 2>&1 | head -1 | awk '{print $3}')"
}

# Structural assertions on a rendered config: python3 - <assertion> <rendered.yaml>
cat >"$tmp/assert.py" <<'PY'
import os, re, sys
import yaml

what, path = sys.argv[1], sys.argv[2]
cfg = yaml.safe_load(open(path)) or {}
services = cfg.get("services") or {}
if not services:
    sys.exit("config did not render (see the parse checks above)")
APP = ["gateway", "orchestrator", "memory", "model-gateway", "tools", "scheduler"]
ONE_SHOT = {"ollama-pull"}
# Images with nothing to run a healthcheck with; each one's health is watched another way.
NO_HEALTHCHECK = {
    "nats-exporter": "FROM scratch; Prometheus's up{job=\"nats\"} and the service-down alert watch it",
    "tempo": "distroless, with no health command of its own; Alloy retries its exports",
}
errors = []

def raw_services(file):
    return set((yaml.safe_load(open(file)) or {}).get("services") or {})

# The observability set: what compose.observability.yaml adds, not the Jarvis services it extends.
OBS = sorted(raw_services("compose.observability.yaml") - raw_services("compose.yaml"))

def published(svc):
    out = []
    for p in svc.get("ports") or []:
        if isinstance(p, dict):
            out.append(str(p.get("published", "")))
        else:  # short syntax [ip:]host:container[/proto]
            parts = str(p).split("/")[0].split(":")
            out.append(parts[-2] if len(parts) > 1 else "(ephemeral)")
    return out

def size(v):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmg]?)b?", str(v).strip().lower())
    if not m:
        raise ValueError(f"unparseable memory {v!r}")
    return float(m.group(1)) * 1024 ** " kmg".index(m.group(2) or " ")

if what == "healthchecks":
    for name, svc in services.items():
        hc = svc.get("healthcheck")
        if hc:
            if hc.get("disable") or hc.get("test") in (["NONE"], "NONE"):
                errors.append(f"{name}: healthcheck disabled")
        elif name in NO_HEALTHCHECK:
            continue
        elif "build" in svc:
            b = svc["build"]
            df = os.path.join(b["context"], b.get("dockerfile", "Dockerfile"))
            text = open(df).read() if os.path.exists(df) else ""
            if not re.search(r"^HEALTHCHECK\s+(?!NONE)", text, re.M):
                errors.append(f"{name}: no healthcheck in compose nor in {df}")
        else:
            errors.append(f"{name}: no healthcheck")

elif what == "build-args":
    # One Dockerfile for all six: each service must build its own package on its own port.
    for name, svc in services.items():
        if "build" not in svc:
            continue
        b = svc["build"]
        args = b.get("args") or {}
        if b.get("dockerfile") != "services/Dockerfile":
            errors.append(f"{name}: built from {b.get('dockerfile')!r}, want 'services/Dockerfile'")
        if args.get("SERVICE") != name:
            errors.append(f"{name}: build arg SERVICE={args.get('SERVICE')!r}, want {name!r}")
        env = svc.get("environment") or {}
        port = env.get("GATEWAY_PORT" if name == "gateway" else "HTTP_PORT")
        if str(args.get("PORT")) != str(port):
            errors.append(f"{name}: build arg PORT={args.get('PORT')!r}, but it listens on {port!r}")

elif what == "restart":
    for name, svc in services.items():
        want = "no" if name in ONE_SHOT else "unless-stopped"
        if str(svc.get("restart")) != want:
            errors.append(f"{name}: restart={svc.get('restart')!r}, want {want!r}")

elif what == "depends":
    need = {s: {"nats"} for s in APP}
    for s in ["gateway", "orchestrator", "memory", "scheduler", "tools"]:
        need[s].add("postgres")
    for s in ["gateway", "orchestrator"]:
        need[s].add("redis")
    need["model-gateway"].add("ollama")
    need["ollama-pull"] = {"ollama"}
    for name, svc in services.items():
        deps = svc.get("depends_on") or {}
        if isinstance(deps, list):
            deps = {d: {"condition": "service_started"} for d in deps}
        for dep, how in deps.items():
            # What has no healthcheck can only be waited for until it has started.
            want = "service_started" if dep in NO_HEALTHCHECK else "service_healthy"
            if (how or {}).get("condition") != want:
                errors.append(f"{name} -> {dep}: condition is not {want}")
        missing = need.get(name, set()) - set(deps)
        if missing:
            errors.append(f"{name}: missing depends_on {sorted(missing)}")
    if "ollama-pull" in (services.get("model-gateway", {}).get("depends_on") or {}):
        errors.append("model-gateway must not wait for ollama-pull (models download in the background)")

elif what == "ports":
    for name, svc in services.items():
        ports = published(svc)
        if name == "traefik":
            if sorted(ports) != ["443", "80"]:
                errors.append(f"traefik publishes {ports}, want exactly 80 and 443")
        elif ports or svc.get("network_mode") == "host":
            errors.append(f"{name} publishes {ports or 'the host network'}")

elif what == "limits":
    cpus = mem = 0.0
    for name, svc in services.items():
        lim = ((svc.get("deploy") or {}).get("resources") or {}).get("limits") or {}
        if "cpus" not in lim or "memory" not in lim:
            errors.append(f"{name}: needs deploy.resources.limits.cpus and .memory")
            continue
        cpus += float(lim["cpus"])
        mem += size(lim["memory"])
    if cpus > 8:
        errors.append(f"cpu limits total {cpus:g} > 8")
    if mem > 16 * 1024 ** 3:
        errors.append(f"memory limits total {mem / 1024 ** 3:.2f} GiB > 16")
    if not errors:
        print(f"{cpus:g} CPUs, {mem / 1024 ** 3:.2f} GiB")

elif what == "postgres-memory":
    svc = services.get("postgres", {})
    command = svc.get("command") or []
    if isinstance(command, str):
        command = command.split()
    settings = dict(c.split("=", 1) for c in command if "=" in c)
    if "shared_buffers" not in settings:
        errors.append("postgres: no shared_buffers in its command (the default 128 MB is smaller than the HNSW index)")
    else:
        buffers = size(settings["shared_buffers"])
        if buffers < 256 * 1024 ** 2:
            errors.append(f"postgres: shared_buffers {settings['shared_buffers']} < 256 MB")
        lim = ((svc.get("deploy") or {}).get("resources") or {}).get("limits") or {}
        if "memory" in lim and buffers > size(lim["memory"]) / 2:
            errors.append(f"postgres: shared_buffers {settings['shared_buffers']} > half its memory limit {lim['memory']}")
        if not errors:
            print(f"shared_buffers {settings['shared_buffers']}")

elif what == "prod-routing":
    labels = services.get("gateway", {}).get("labels") or {}
    if isinstance(labels, list):
        labels = dict(l.split("=", 1) for l in labels)
    domain = os.environ["JARVIS_DOMAIN"]
    if labels.get("traefik.http.routers.jarvis.rule") != f"Host(`{domain}`) && !Path(`/metrics`)":
        errors.append(f"gateway router rule is {labels.get('traefik.http.routers.jarvis.rule')!r}")
    if not labels.get("traefik.http.routers.jarvis.tls.certresolver"):
        errors.append("gateway router has no certresolver")
    env = services.get("traefik", {}).get("environment") or {}
    if not any(k.endswith("_ACME_STORAGE") for k in env):
        errors.append("traefik has no ACME certificate resolver")
    # env_file is inlined into `environment` by `config`: every .env.prod key must show up.
    keys = [l.split("=", 1)[0] for l in open(".env.prod") if re.match(r"^[A-Za-z_]\w*=", l)]
    for s in APP:
        senv = services.get(s, {}).get("environment") or {}
        absent = [k for k in keys if k not in senv]
        if s == "tools":
            if "POSTGRES_PASSWORD" in senv or "ANTHROPIC_API_KEY" in senv:
                errors.append("tools must not receive .env.prod (secrets)")
        elif absent:
            errors.append(f"{s}: .env.prod not applied (missing {absent[:3]})")

elif what == "obs-limits":
    # The observability set within 1.5 GB, on top of the services' 14 GB: the 16 GB VPS keeps
    # some room for the OS. CPU limits are ceilings only: the set never takes a core from ollama
    # for long, however busy, and they are not summed with the services'.
    mem = total = cpus = 0.0
    for name, svc in services.items():
        lim = ((svc.get("deploy") or {}).get("resources") or {}).get("limits") or {}
        if name in OBS:
            if "cpus" not in lim or "memory" not in lim:
                errors.append(f"{name}: needs deploy.resources.limits.cpus and .memory")
                continue
            mem += size(lim["memory"])
            cpus += float(lim["cpus"])
        if "memory" in lim:
            total += size(lim["memory"])
    if mem > 1.5 * 1024 ** 3:
        errors.append(f"observability memory limits total {mem / 1024 ** 2:.0f} MiB > 1536 MiB")
    if total > 16 * 1024 ** 3:
        errors.append(f"memory limits of everything total {total / 1024 ** 3:.2f} GiB > 16")
    if not errors:
        print(f"{len(OBS)} services, {mem / 1024 ** 2:.0f} MiB, {cpus:g} CPUs; all: {total / 1024 ** 3:.2f} GiB")

elif what == "obs-grafana":
    g = services.get("grafana") or {}
    env = {k: str(v) for k, v in (g.get("environment") or {}).items()}
    want = {
        "GF_AUTH_ANONYMOUS_ENABLED": "false",
        "GF_USERS_ALLOW_SIGN_UP": "false",
        "GF_ANALYTICS_REPORTING_ENABLED": "false",
        "GF_SERVER_SERVE_FROM_SUB_PATH": "true",
    }
    for key, value in want.items():
        if env.get(key, "").lower() != value:
            errors.append(f"grafana: {key}={env.get(key)!r}, want {value!r}")
    if not env.get("GF_SERVER_ROOT_URL", "").rstrip("/").endswith("/grafana"):
        errors.append(f"grafana: GF_SERVER_ROOT_URL {env.get('GF_SERVER_ROOT_URL')!r} is not under /grafana")
    raw = (yaml.safe_load(open("compose.observability.yaml"))["services"]["grafana"].get("environment") or {})
    for key in ["GF_SECURITY_ADMIN_PASSWORD", "JARVIS_ADMIN_KEY"]:
        if not re.fullmatch(r"\$\{" + key + r":\?[^}]*\}", str(raw.get(key, ""))):
            errors.append(f"grafana: {key} is {raw.get(key)!r}, want ${{{key}:?...}}")
    labels = g.get("labels") or {}
    rule = labels.get("traefik.http.routers.grafana.rule", "")
    if "/grafana" not in rule or labels.get("traefik.enable") != "true":
        errors.append(f"grafana: no Traefik router on /grafana ({rule!r})")
    # Traefik orders routers by priority, by default the rule's length: the gateway's catch-all
    # must not outrank Grafana's, whatever the domain.
    gw = (services.get("gateway") or {}).get("labels") or {}
    gw_rule = gw.get("traefik.http.routers.jarvis.rule", "")
    gw_priority = int(gw.get("traefik.http.routers.jarvis.priority", len(gw_rule)))
    priority = int(labels.get("traefik.http.routers.grafana.priority", len(rule)))
    if priority <= max(gw_priority, len("Host(``) && !Path(`/metrics`)") + 253):
        errors.append(f"grafana router priority {priority} does not outrank the gateway's ({gw_priority}, or a 253-character domain's)")
    # The gateway links runs and alerts into this Grafana: the same address as its root URL.
    root = env.get("GF_SERVER_ROOT_URL", "").replace("%(domain)s", env.get("GF_SERVER_DOMAIN", ""))
    gateway_url = str(((services.get("gateway") or {}).get("environment") or {}).get("GRAFANA_URL"))
    if gateway_url.rstrip("/") != root.rstrip("/"):
        errors.append(f"gateway GRAFANA_URL {gateway_url!r} is not Grafana's root URL {root!r}")
    for s in APP:
        senv = (services.get(s) or {}).get("environment") or {}
        if senv.get("OTEL_EXPORTER_OTLP_ENDPOINT") != "http://alloy:4318":
            errors.append(f"{s}: OTEL_EXPORTER_OTLP_ENDPOINT={senv.get('OTEL_EXPORTER_OTLP_ENDPOINT')!r}, want http://alloy:4318")
    # The NATS exporter reads the monitoring port, which nats must serve.
    command = (services.get("nats") or {}).get("command") or []
    if isinstance(command, str):
        command = command.split()
    port = command[command.index("-m") + 1] if "-m" in command[:-1] else None
    exporter = " ".join((services.get("nats-exporter") or {}).get("command") or [])
    if port is None or f"http://nats:{port}" not in exporter:
        errors.append(f"nats monitoring port {port!r} and the exporter's command {exporter!r} disagree")
    # Data on named volumes; what is bound from the host (configs, the Docker socket) read-only.
    for name in OBS:
        for v in (services.get(name) or {}).get("volumes") or []:
            if isinstance(v, dict) and v.get("type") == "bind" and not v.get("read_only"):
                errors.append(f"{name}: bind mount {v.get('source')} is writable")
            elif isinstance(v, str) and v.split(":")[0].startswith(("/", ".")) and not v.endswith(":ro"):
                errors.append(f"{name}: bind mount {v} is writable")

elif what == "searxng":
    # The optional SearXNG for web_search: only with its profile, a pinned image, JSON output on
    # and the limiter off in the settings it is given read-only, and the tools service not
    # pointed at it unless the operator asks (SEARXNG_URL empty by default).
    svc = services.get("searxng") or {}
    if svc.get("profiles") != ["search"]:
        errors.append(f"searxng: profiles {svc.get('profiles')!r}, want ['search']")
    image = str(svc.get("image", ""))
    if not re.fullmatch(r"searxng/searxng:\d{4}\.\d+\.\d+-[0-9a-f]+", image):
        errors.append(f"searxng: image {image!r} is not a pinned searxng/searxng release tag")
    mounts = [v for v in svc.get("volumes") or [] if isinstance(v, str) and v.split(":")[1:2] == ["/etc/searxng/settings.yml"]]
    if len(mounts) != 1 or not mounts[0].endswith(":ro"):
        errors.append(f"searxng: settings.yml is not mounted read-only ({mounts!r})")
    else:
        settings = yaml.safe_load(open(mounts[0].split(":")[0])) or {}
        if "json" not in ((settings.get("search") or {}).get("formats") or []):
            errors.append("searxng: search.formats lacks json (SearXNG answers 403 to web_search)")
        server = settings.get("server") or {}
        if server.get("limiter") is not False or server.get("public_instance") is not False:
            errors.append("searxng: limiter and public_instance must be false (the limiter turns the tools service away)")
        if "secret_key" in server:
            errors.append("searxng: a secret_key in the settings file; it comes from SEARXNG_SECRET")
    if "SEARXNG_SECRET" not in (svc.get("environment") or {}):
        errors.append("searxng: no SEARXNG_SECRET in its environment")
    tools_env = (services.get("tools") or {}).get("environment") or {}
    if tools_env.get("SEARXNG_URL") not in ("", None):
        errors.append(f"tools: SEARXNG_URL defaults to {tools_env.get('SEARXNG_URL')!r}; it is set only when asked")
    if "searxng" in ((services.get("tools") or {}).get("depends_on") or {}):
        errors.append("tools must not depend on searxng (it runs only with its profile)")

elif what == "tools-sandbox":
    # Chromium's sandbox and run_code's bubblewrap with the least the container can be given
    # (docs/deploy.md): SYS_CHROOT alone, no privilege gain, /proc unmasked (a box's fresh /proc
    # needs it), and the seccomp profile that allows namespaces and the box's mounts and nothing
    # else Docker's default grants only with a capability.
    import json
    svc = services.get("tools") or {}
    opts = [str(o) for o in svc.get("security_opt") or []]
    for want in ("no-new-privileges:true", "systempaths=unconfined"):
        if want not in opts:
            errors.append(f"tools: no {want} in security_opt {opts!r}")
    # Unmasking /proc is for tools alone: no other service makes boxes.
    for name, other in services.items():
        if name != "tools" and "systempaths=unconfined" in [str(o) for o in other.get("security_opt") or []]:
            errors.append(f"{name}: systempaths=unconfined is for tools only")
    profiles = [o.split(":", 1)[1] if o.startswith("seccomp:") else o.split("=", 1)[1] for o in opts if o.startswith(("seccomp:", "seccomp="))]
    if [os.path.normpath(p) for p in profiles] != ["infra/tools-seccomp.json"]:
        errors.append(f"tools: seccomp profile {profiles!r}, want ./infra/tools-seccomp.json")
    caps = [str(c).upper().removeprefix("CAP_") for c in svc.get("cap_add") or []]
    if [str(c).upper() for c in svc.get("cap_drop") or []] != ["ALL"] or caps != ["SYS_CHROOT"] or svc.get("privileged"):
        errors.append(f"tools: cap_drop {svc.get('cap_drop')!r}, cap_add {svc.get('cap_add')!r}: want every capability dropped but SYS_CHROOT")
    profile = json.load(open("infra/tools-seccomp.json"))
    if profile.get("defaultAction") != "SCMP_ACT_ERRNO":
        errors.append(f"tools-seccomp.json: defaultAction {profile.get('defaultAction')!r}")
    allowed = {n for r in profile["syscalls"] if r["action"] == "SCMP_ACT_ALLOW" and not r.get("args") for n in r["names"]}
    # What the two sandboxes are made of: the kernel grants each only inside a user namespace the
    # caller made, since the container has no CAP_SYS_ADMIN.
    needed = {"clone", "mount", "umount2", "pivot_root"}
    if needed - allowed:
        errors.append(f"tools-seccomp.json: refuses {sorted(needed - allowed)}, which bubblewrap needs")
    never = {"setns", "bpf", "ptrace", "keyctl", "add_key", "request_key", "init_module", "finit_module",
             "kexec_load", "open_by_handle_at", "perf_event_open", "io_uring_setup", "clone3", "unshare",
             "sethostname", "setdomainname", "fsopen", "fsconfig", "fsmount", "fspick", "move_mount",
             "open_tree", "mount_setattr", "umount", "swapon", "reboot", "syslog", "quotactl"}
    everywhere = {n for r in profile["syscalls"] if r["action"] == "SCMP_ACT_ALLOW" for n in r["names"]} - {"unshare"}
    if (allowed | everywhere) & never:
        errors.append(f"tools-seccomp.json: allows {sorted((allowed | everywhere) & never)}")
    # unshare: any namespace but time (CLONE_NEWTIME), which neither sandbox uses.
    rules = [r for r in profile["syscalls"] if "unshare" in r["names"] and r["action"] == "SCMP_ACT_ALLOW"]
    ok = rules and all(
        len(r.get("args") or []) == 1 and r["args"][0]["op"] == "SCMP_CMP_MASKED_EQ"
        and r["args"][0]["index"] == 0 and r["args"][0]["value"] & 0x80 == 0x80
        and r["args"][0].get("valueTwo", 0) == 0 for r in rules)
    if not ok:
        errors.append("tools-seccomp.json: unshare may make a time namespace")

else:
    sys.exit(f"unknown assertion {what}")

if errors:
    sys.exit("\n".join(errors))
PY
assert() { python3 "$tmp/assert.py" "$@"; }

# services/Dockerfile builds every service: multi-stage, non-root, /readyz healthcheck,
# node dist/main.js, and parameterised by SERVICE and PORT.
dockerfiles() {
  local f=services/Dockerfile bad=0 stray
  [[ -f $f ]] || { echo "$f missing"; return 1; }
  [[ $(grep -c '^FROM ' "$f") -ge 2 ]] || { echo "$f: not multi-stage"; bad=1; }
  grep -q '^ARG SERVICE' "$f" || { echo "$f: no ARG SERVICE"; bad=1; }
  grep -q '^ARG PORT' "$f" || { echo "$f: no ARG PORT"; bad=1; }
  grep -q '^USER node' "$f" || { echo "$f: no USER node"; bad=1; }
  grep -q '^HEALTHCHECK .*readyz' "$f" || grep -A1 '^HEALTHCHECK' "$f" | grep -q readyz ||
    { echo "$f: no /readyz HEALTHCHECK"; bad=1; }
  grep -q '^CMD \["node", "dist/main.js"\]' "$f" || { echo "$f: CMD is not node dist/main.js"; bad=1; }
  grep -q "deploy --prod --legacy" "$f" || { echo "$f: no pnpm deploy"; bad=1; }
  # The browser tools drive Debian's Chromium, which only the tools image installs.
  grep -q 'apt-get install .*chromium' "$f" || { echo "$f: the tools image installs no chromium"; bad=1; }
  # A per-service Dockerfile left behind would drift from the shared one unnoticed.
  stray=$(ls services/*/Dockerfile 2>/dev/null || true)
  [[ -z $stray ]] || { echo "per-service Dockerfiles remain: $stray"; bad=1; }
  return $bad
}

check "compose.yaml parses (docker-compose config -q)" docker-compose "${local_cfg[@]}" config -q
check "compose.yaml + compose.prod.yaml parse (--env-file .env.prod)" docker-compose "${prod_cfg[@]}" config -q
check "prod refuses to render without JARVIS_DOMAIN, ACME_EMAIL or POSTGRES_PASSWORD" requires_prod_vars
check "every service has a healthcheck (compose, or HEALTHCHECK in its Dockerfile)" assert healthchecks "$tmp/local.yaml"
check "every service restarts unless-stopped (one-shot ollama-pull: \"no\")" assert restart "$tmp/local.yaml"
check "depends_on waits for service_healthy: nats; postgres; redis; ollama (not ollama-pull)" assert depends "$tmp/local.yaml"
check "local: only traefik publishes ports, exactly 80 and 443" assert ports "$tmp/local.yaml"
check "prod: only traefik publishes ports, exactly 80 and 443" assert ports "$tmp/prod.yaml"
check "prod: every service has cpu+memory limits, total within 8 vCPU / 16 GiB" assert limits "$tmp/prod.yaml"
check "postgres: shared_buffers of at least 256 MB (local)" assert postgres-memory "$tmp/local.yaml"
check "prod: postgres shared_buffers within half its memory limit" assert postgres-memory "$tmp/prod.yaml"
check "prod: Let's Encrypt router on Host(JARVIS_DOMAIN); .env.prod reaches the services but tools" assert prod-routing "$tmp/prod.yaml"
check "compose builds each service from services/Dockerfile with its own SERVICE and PORT" assert build-args "$tmp/local.yaml"
check "compose.yaml + compose.observability.yaml parse (Grafana password and admin key set)" "${obs_env[@]}" docker-compose "${obs_cfg[@]}" config -q
check "compose.yaml + compose.prod.yaml + compose.observability.yaml parse" "${obs_env[@]}" docker-compose "${prod_obs_cfg[@]}" config -q
check "observability refuses to render without GF_SECURITY_ADMIN_PASSWORD or JARVIS_ADMIN_KEY" requires_obs_vars
check "observability: only traefik publishes ports, no backend does (local)" assert ports "$tmp/obs.yaml"
check "observability: only traefik publishes ports, no backend does (prod)" assert ports "$tmp/prod-obs.yaml"
check "observability: healthchecks (but nats-exporter, FROM scratch, and tempo, distroless)" assert healthchecks "$tmp/obs.yaml"
check "observability: every service restarts unless-stopped" assert restart "$tmp/obs.yaml"
check "observability: depends_on waits for service_healthy (service_started for what has no healthcheck)" assert depends "$tmp/obs.yaml"
check "observability: cpu+memory limits on each, memory within 1.5 GiB; everything within 16 GiB (prod)" assert obs-limits "$tmp/prod-obs.yaml"
check "observability: Grafana anonymous and sign-up off, password and admin key required, at /grafana above the gateway's router, which links there; OTLP to alloy; nats monitor on" assert obs-grafana "$tmp/obs.yaml"
check "observability (prod): the same for Grafana's router against Host(JARVIS_DOMAIN)" assert obs-grafana "$tmp/prod-obs.yaml"
check "observability: prometheus.yml, and the PromQL of alert rules and Tempo's metric links, pass promtool" promtool_checks
check "searxng (profile search): pinned image, read-only settings with json output and no limiter, secret from env; tools not pointed at it by default" assert searxng "$tmp/local.yaml"
check "searxng (prod): the same after compose.prod.yaml merges in" assert searxng "$tmp/prod.yaml"
check "tools: Chromium's and run_code's sandboxes with SYS_CHROOT alone, no-new-privileges, /proc unmasked and infra/tools-seccomp.json (namespaces and the box's mounts, no time namespace, setns or new mount API)" assert tools-sandbox "$tmp/local.yaml"
check "tools (prod): the same after compose.prod.yaml merges in" assert tools-sandbox "$tmp/prod.yaml"
check "services/Dockerfile: ARG SERVICE and PORT, multi-stage, USER node, /readyz HEALTHCHECK, pnpm deploy, node dist/main.js, Chromium for tools" dockerfiles

echo "compose: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
