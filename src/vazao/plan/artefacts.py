"""The planned winner as the files users run it with: the engine command for one replica (`serve.sh`), a
docker compose file with one service per replica behind nginx (`compose.yaml`, `nginx.conf`), Kubernetes
Deployment + Service + model-cache PVC (`k8s.yaml`), the `vazao bench` command that checks it (`bench.sh`) and
a README. Every amount the plan decided (replicas, GPUs per replica, batch, ports, the argv) is read from the
candidate and its EngineCommand, never worked out again here; the YAML is `inputs.dump_yaml` of plain dicts.

The containers are each engine's official image, pinned by tag (checked 2026-09; sources in IMAGES too):
| engine | image | source |
|---|---|---|
| vLLM | `vllm/vllm-openai:v0.34.0` | docs.vllm.ai "Using Docker"; the release engine_flags.yaml was read from |
| SGLang | `lmsysorg/sglang:v0.5.23` | sgl-project/sglang docs/get-started/install.mdx; the release read likewise |
| llama.cpp | `ghcr.io/ggml-org/llama.cpp:server-cuda-b11382` | llama.cpp docs/docker.md, .devops/cuda.Dockerfile |
| TensorRT-LLM | `nvcr.io/nvidia/tensorrt-llm/release:1.2.0` | TRT-LLM installation/containers.html, release notes |
| endpoint | `nginx:1.30-alpine` | hub.docker.com/_/nginx (1.30: the stable branch since April 2026) |
The llama.cpp and TensorRT-LLM flags were read at other revisions (engine_flags.yaml says which); the flags
emitted are long-standing ones. vLLM v0.3x and SGLang v0.5.2x images are CUDA 13 (driver 580 or newer;
vLLM's `-cu129` tags and SGLang's `v0.5.19-cu129`, its last CUDA 12 tag, run on older drivers); the
llama.cpp `server-cuda` image is CUDA 12.8; TensorRT-LLM 1.2.0 is its newest stable release (1.3.0 is still
at release candidates).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

from vazao import inputs
from vazao.errors import VazaoError
from vazao.plan.commands import EngineCommand, LaunchSpec, launch_command
from vazao.plan.emit import planned_bench, spec_on
from vazao.plan.evaluate import Candidate

HF_CACHE = "/root/.cache/huggingface"  # the engines run as root in their images; HF_HOME's default under it
ENDPOINT_IMAGE = "nginx:1.30-alpine"
TOKEN_ENV = "HF_TOKEN"  # read by huggingface_hub in every engine image; passed through, never written down
TOKEN_SECRET = "hf-token"  # the Kubernetes Secret the README says to create (optional: public models need none)
FILES = ("serve.sh", "compose.yaml", "nginx.conf", "k8s.yaml", "bench.sh", "README.md")


@dataclass(frozen=True)
class EngineImage:
    image: str  # repository:tag
    executable: str | None  # where the image keeps the command's executable when it is not on PATH
    health: str  # HTTP path that answers 200 once the model is loaded
    cache: str  # where the engine reads the model from, inside the container
    workdir: str | None  # llama.cpp names its GGUF relative to the model folder
    host: tuple[str, ...]  # the engine binds loopback by default: inside a container it must listen on all
    shm: bool  # PyTorch engines pass tensors between the GPU workers of a replica through /dev/shm
    source: str
    env: tuple[tuple[str, str], ...] = ()  # fixed settings the container needs (no secrets: those come from outside)


IMAGES = {
    # ENTRYPOINT ["vllm", "serve"]; binds every interface by default (--host None); /health.
    # The vLLM and SGLang tags are the releases whose flags catalog/data/engine_flags.yaml was read from (a test
    # keeps them equal), so the command is checked against the parser that runs it.
    "vllm": EngineImage("vllm/vllm-openai:v0.34.0", None, "/health", HF_CACHE, None, (), True,
                        "docs.vllm.ai Using Docker (docs/deployment/docker.md); hub.docker.com/r/vllm/vllm-openai"),
    # --host defaults to 127.0.0.1 (docs/backend/server_arguments.md); docker/compose.yaml mounts the HF cache
    # and sets ipc: host.
    "sglang": EngineImage("lmsysorg/sglang:v0.5.23", None, "/health", HF_CACHE, None, ("--host", "0.0.0.0"), True,
                          "sgl-project/sglang docs/get-started/install.mdx, docker/compose.yaml"),
    # The server image keeps llama-server in /app (not on PATH) and sets LLAMA_ARG_HOST=0.0.0.0.
    # -hf downloads into LLAMA_CACHE (common/common.cpp, fs_get_cache_directory): pointed at the mounted volume.
    "llama.cpp": EngineImage("ghcr.io/ggml-org/llama.cpp:server-cuda-b11382", "/app/llama-server", "/health",
                             "/models", "/models", (), False,
                             "ggml-org/llama.cpp docs/docker.md, .devops/cuda.Dockerfile",
                             (("LLAMA_CACHE", "/models"),)),
    # trtllm-serve --host defaults to localhost (commands/trtllm-serve); the quick start runs the container with
    # --ipc host.
    "trtllm": EngineImage("nvcr.io/nvidia/tensorrt-llm/release:1.2.0", None, "/health", HF_CACHE, None,
                          ("--host", "0.0.0.0"), True,
                          "nvidia.github.io/TensorRT-LLM quick-start-guide.html, installation/containers.html"),
}


@dataclass(frozen=True)
class Artefacts:
    """What `write_artefacts` writes, as text: file name → content."""

    name: str  # the deployment's name (DNS-1035 label: Kubernetes objects, compose project)
    engine: str
    replicas: int
    gpus_per_replica: int
    command: EngineCommand  # one replica's command, on the port a container listens on
    files: tuple[tuple[str, str], ...]

    def text(self, name: str) -> str:
        return dict(self.files)[name]


def _name(c: Candidate) -> str:
    """vazao-<model>-<gpu> as a DNS-1035 label (a Service name: a letter first, at most 63 characters)."""
    model = c.shape.model
    if "/" in model or os.sep in model:  # a config.json, its folder or a .gguf: name it by the file or folder
        p = Path(model)
        model = p.parent.name if p.name == "config.json" else re.sub(r"\.(gguf|json)$", "", p.name)
    raw = re.sub(r"[^a-z0-9]+", "-", f"vazao-{model}-{c.shape.gpu}".lower())
    return raw[:63].strip("-")


def _image(engine: str) -> EngineImage:
    if engine not in IMAGES:
        raise VazaoError(f"no container image for engine {engine!r} (known: {', '.join(IMAGES)})")
    return IMAGES[engine]


def _gpu_ids(replica: int, per: int) -> list[str]:
    """The GPUs of one replica on a machine: consecutive sets, replica i on i·per … i·per + per - 1."""
    return [str(replica * per + j) for j in range(per)]


def _slo_text(slo) -> str:
    return ", ".join(f"{k} <= {v * 1e3:g} ms" for k, v in slo.limits.items()) or "none"


def _header(c: Candidate, result, cmd: EngineCommand, engine_note: str) -> list[str]:
    """Comment lines naming the deployment, the traffic, the SLO and the engine profile that was simulated."""
    lines = [f"vazao plan: {c.shape.label()} x {c.replicas} replica{'s' if c.replicas > 1 else ''} "
             f"({c.count} GPU{'s' if c.count > 1 else ''}, batch <= {c.max_batch})",
             f"traffic: {result.inputs.traffic.describe()}; workload: {result.inputs.workload}; "
             f"SLO: {_slo_text(result.inputs.slo)}",
             f"engine profile simulated: {c.shape.engine}; this command: {cmd.engine} ({cmd.source})"]
    if engine_note:
        lines.append(engine_note)
    lines += [f"note: {n}" for n in cmd.notes]
    return lines


def _comment(lines: list[str]) -> str:
    return "".join(f"# {line}\n" for line in lines)


def _port(cmd: EngineCommand) -> int:
    """The port the command listens on, read from its own flags."""
    for flag, value, _ in cmd.flags:
        if flag == "--port":
            return int(value)
    raise VazaoError(f"{cmd.engine}: the command names no --port")


def _container_argv(cmd: EngineCommand, img: EngineImage) -> tuple[list[str], list[str]]:
    """(entrypoint, arguments) of the command inside the image: the executable (where the image keeps it), then
    argv unchanged, then the flag that makes a loopback-by-default engine listen beyond its container."""
    exe = img.executable or cmd.argv[0]
    return [exe], [*cmd.argv[1:], *img.host]


CONFIG_DIR = "/vazao"  # where a container finds the files a command reads (EngineCommand.files), and runs from


def _serve_sh(c: Candidate, spec: LaunchSpec, engine: str, header: list[str], files: tuple = ()) -> str:
    per = c.shape.gpus_per_replica
    body = ["set -eu"]
    if files:  # the command names them relative to the folder it runs in: this script's
        body.append('cd "$(dirname "$0")"')
    if c.replicas == 1:
        body.append(launch_command(engine, spec).shell)
        ports = f"port {spec.port}"
    else:
        # One process per GPU set. They take the ports after the endpoint's, and nginx on spec.port makes them
        # the one URL bench.sh (and a client) uses, as compose.yaml does; killing the script stops them all.
        first = spec.port + 1
        ports = f"ports {first}-{first + c.replicas - 1}"
        body.append(f'command -v nginx >/dev/null || {{ echo "serve.sh: {c.replicas} replicas need a load balancer on '
                    f':{spec.port} (nginx, not found): install nginx, or run compose.yaml" >&2; exit 1; }}')
        body.append("trap 'kill 0' INT TERM EXIT")
        for i in range(c.replicas):
            one = launch_command(engine, replace(spec, port=first + i))
            body.append(f"CUDA_VISIBLE_DEVICES={','.join(_gpu_ids(i, per))} {one.shell} &")
        # a whole nginx.conf under a scratch prefix: no root, its pid, logs and temporary files kept there
        conf = ("pid nginx.pid;\nerror_log stderr;\nevents {}\nhttp {\n    access_log off;\n"
                + _indent(_balancer([f"127.0.0.1:{first + i}" for i in range(c.replicas)], spec.port)) + "}\n")
        body += ['lb="$(mktemp -d)"', 'mkdir "$lb/logs"', "cat > \"$lb/nginx.conf\" <<'NGINX'", conf + "NGINX",
                 "nginx -p \"$lb\" -c nginx.conf -g 'daemon off;' &", "wait"]
    lines = [*header, f"{c.replicas} replica(s) on this machine, {per} GPU(s) each, {ports}"]
    if c.replicas > 1:
        lines.append(f"one endpoint: nginx on :{spec.port} over 127.0.0.1 {ports} (as compose.yaml's endpoint)")
    return "#!/bin/sh\n" + _comment(lines) + "\n".join(body) + "\n"


def _indent(text: str) -> str:
    return "".join(f"    {line}\n" if line else "\n" for line in text.splitlines())


def _balancer(servers: list[str], port: int) -> str:
    """nginx's upstream over `servers` (host:port) and the server block listening on `port` in front of them."""
    return ("upstream engine {\n"
            + "    least_conn;  # an LLM request lasts seconds: send it to the replica with the fewest in flight\n"
            + "".join(f"    server {s};\n" for s in servers)
            + "    keepalive 32;\n}\n\n"
            + f"server {{\n    listen {port};\n    location / {{\n"
            + "        proxy_pass http://engine;\n"
            + "        proxy_http_version 1.1;\n"
            + "        proxy_set_header Connection \"\";\n"
            + "        proxy_buffering off;  # stream each token as it comes: TTFT and TPOT are measured through here\n"
            + "        proxy_read_timeout 3600s;  # a long answer streams for minutes\n"
            + "        client_max_body_size 64m;  # long prompts\n"
            + "    }\n}\n")


def _nginx_conf(replicas: int, port: int, header: list[str]) -> str:
    return (_comment([*header, "one endpoint over the replicas; compose.yaml mounts it as "
                                "/etc/nginx/conf.d/default.conf"])
            + _balancer([f"replica-{i}:{port}" for i in range(replicas)], port))


def _compose(c: Candidate, name: str, cmd: EngineCommand, img: EngineImage, header: list[str]) -> str:
    entrypoint, args = _container_argv(cmd, img)
    per = c.shape.gpus_per_replica
    services: dict = {}
    for i in range(c.replicas):
        svc: dict = {
            "image": img.image,
            "entrypoint": list(entrypoint),  # fresh lists: safe_dump would write YAML anchors for shared ones
            "command": list(args),
            # TOKEN_ENV with no value: compose passes the shell's own, if set
            "environment": [TOKEN_ENV, *(f"{k}={v}" for k, v in img.env)],
            "volumes": [f"model-cache:{img.cache}"],
        }
        if cmd.files:
            svc["volumes"] += [f"./{n}:{CONFIG_DIR}/{n}:ro" for n, _ in cmd.files]
        if img.workdir or cmd.files:
            svc["working_dir"] = img.workdir or CONFIG_DIR
        if img.shm and per > 1:
            svc["ipc"] = "host"  # vLLM/SGLang/TRT-LLM docs: tensor-parallel workers share memory through /dev/shm
        svc["deploy"] = {"resources": {"reservations": {"devices": [
            {"driver": "nvidia", "device_ids": _gpu_ids(i, per), "capabilities": ["gpu"]}]}}}
        svc["restart"] = "unless-stopped"
        services[f"replica-{i}"] = svc
    services["endpoint"] = {
        "image": ENDPOINT_IMAGE,
        "ports": [f"{_port(cmd)}:{_port(cmd)}"],
        "volumes": ["./nginx.conf:/etc/nginx/conf.d/default.conf:ro"],
        "depends_on": [f"replica-{i}" for i in range(c.replicas)],
        "restart": "unless-stopped",
    }
    doc = {"name": name, "services": services, "volumes": {"model-cache": {}}}
    lines = [*header, f"image {img.image} ({img.source}); endpoint {ENDPOINT_IMAGE} on :{_port(cmd)}",
             f"run: {TOKEN_ENV}=... docker compose up -d  (NVIDIA Container Toolkit)"]
    return _comment(lines) + inputs.dump_yaml(doc, sort_keys=False, default_flow_style=False)


def _cache_gib(model: str) -> int:
    """The model-cache claim: the 16-bit checkpoint (2 bytes a parameter, what the engines download even to
    quantize at load) with a quarter of headroom, in steps of 10 GiB."""
    from vazao.catalog.models import load_model

    params = load_model(model).arch.total_params
    return max(10, math.ceil(params * 2 * 1.25 / 2**30 / 10) * 10)


def gpu_container(cname: str, img: EngineImage, entrypoint: list[str], args: list[str], ports: list[dict],
                  per: int, name: str, config_map: str | None = None) -> tuple[dict, list[dict]]:
    """(container, pod volumes) of one engine server: its GPUs, the token from the optional Secret, the
    image's fixed settings, the model cache, the ConfigMap `config_map` holding the files the command reads
    (mounted where it runs) and, for tensor-parallel workers, a large /dev/shm."""
    container: dict = {
        "name": cname,
        "image": img.image,
        "command": entrypoint,
        "args": args,
        "ports": ports,
        "env": [{"name": TOKEN_ENV, "valueFrom": {"secretKeyRef": {"name": TOKEN_SECRET, "key": "token",
                                                                   "optional": True}}},
                *({"name": k, "value": v} for k, v in img.env)],
        "resources": {"limits": {"nvidia.com/gpu": per}},
        "volumeMounts": [{"name": "model-cache", "mountPath": img.cache}],
        # Loading weights takes minutes: the pod joins the Service only once the engine answers.
        "readinessProbe": {"httpGet": {"path": img.health, "port": "http"}, "initialDelaySeconds": 30,
                           "periodSeconds": 10, "failureThreshold": 3},
    }
    if img.workdir or config_map:
        container["workingDir"] = img.workdir or CONFIG_DIR
    volumes: list[dict] = [{"name": "model-cache", "persistentVolumeClaim": {"claimName": f"{name}-model-cache"}}]
    if config_map:
        container["volumeMounts"].append({"name": "config", "mountPath": CONFIG_DIR, "readOnly": True})
        volumes.append({"name": "config", "configMap": {"name": config_map}})
    if img.shm and per > 1:
        # The pod's /dev/shm is 64 MiB; tensor-parallel workers need more (vLLM docs, "Using Kubernetes").
        container["volumeMounts"].append({"name": "shm", "mountPath": "/dev/shm"})
        volumes.append({"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}})
    return container, volumes


def _k8s(c: Candidate, name: str, cmd: EngineCommand, img: EngineImage, header: list[str]) -> str:
    entrypoint, args = _container_argv(cmd, img)
    per = c.shape.gpus_per_replica

    def labels() -> dict:  # a fresh dict each time: safe_dump would write YAML anchors for a shared one
        return {"app.kubernetes.io/name": name, "app.kubernetes.io/managed-by": "vazao"}

    config = f"{name}-config" if cmd.files else None
    container, volumes = gpu_container(re.sub(r"[^a-z0-9]+", "-", cmd.engine), img, entrypoint, args,
                                       [{"name": "http", "containerPort": _port(cmd)}], per, name, config)
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": labels()},
        "spec": {
            "replicas": c.replicas,
            # Every GPU is taken by the planned replicas: a surge pod would wait for GPUs that never free up,
            # so a rollout replaces one pod at a time instead.
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
            "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
            "template": {"metadata": {"labels": labels()},
                         "spec": {"containers": [container], "volumes": volumes}},
        },
    }
    service = {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "labels": labels()},
        "spec": {"selector": {"app.kubernetes.io/name": name},
                 "ports": [{"name": "http", "port": _port(cmd), "targetPort": "http"}]},
    }
    pvc = {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": f"{name}-model-cache", "labels": labels()},
        # Every replica reads the same weights: one shared claim (a storage class with ReadWriteMany).
        "spec": {"accessModes": ["ReadWriteMany"],
                 "resources": {"requests": {"storage": f"{_cache_gib(c.shape.model)}Gi"}}},
    }
    lines = [*header, f"image {img.image} ({img.source})",
             f"run: kubectl create secret generic {TOKEN_SECRET} --from-literal=token=\"${TOKEN_ENV}\"; "
             "kubectl apply -f k8s.yaml"]
    docs = [deployment, service, pvc]
    if config:  # the files the command reads, mounted where it runs
        docs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": config, "labels": labels()},
                     "data": dict(cmd.files)})
    return _comment(lines) + inputs.dump_yaml_all(docs, sort_keys=False, default_flow_style=False)


def _bench_sh(result, port: int, header: list[str]) -> str:
    line = planned_bench(result, f"http://127.0.0.1:{port}/v1")
    lines = [*header, f"checks the running deployment at the planned traffic and SLO, through its endpoint on :{port}"]
    return "#!/bin/sh\n" + _comment(lines) + "set -eu\n" + line + "\n"


def _readme(a_name: str, c: Candidate, cmd: EngineCommand, img: EngineImage, port: int, header: list[str]) -> str:
    per = c.shape.gpus_per_replica
    lines = [f"# {header[0]}", "", *header[1:3], "",
             f"- `serve.sh`: the {cmd.engine} command on one machine, one process per replica ({per} GPU(s) each); "
             "`sh serve.sh`.",
             f"- `compose.yaml` + `nginx.conf`: {c.replicas} replica service(s) of `{img.image}` behind nginx on "
             f":{port}; `{TOKEN_ENV}=... docker compose up -d` (needs the NVIDIA Container Toolkit).",
             f"- `k8s.yaml`: Deployment {a_name} ({c.replicas} pod(s) x {per} `nvidia.com/gpu`), Service and "
             f"model-cache PVC (ReadWriteMany); `kubectl create secret generic {TOKEN_SECRET} "
             f"--from-literal=token=\"${TOKEN_ENV}\"`, `kubectl apply -f k8s.yaml`, then "
             f"`kubectl port-forward service/{a_name} {port}:{port}`"
             + (f" (a port-forward reaches one pod: to load all {c.replicas} through the Service, run bench.sh in "
                f"the cluster against http://{a_name}:{port}/v1, or expose the Service with a LoadBalancer or an "
                "Ingress)." if c.replicas > 1 else "."),
             f"- `bench.sh`: `vazao bench` at the planned traffic and SLO against http://127.0.0.1:{port}/v1; "
             f"run it once `curl 127.0.0.1:{port}{img.health}` answers."]
    if img.workdir and "-m" in cmd.argv:  # a local GGUF (with -hf the server downloads it into the cache)
        model = cmd.argv[cmd.argv.index("-m") + 1]
        lines.append(f"- `{model}` is read from the working folder of serve.sh, and from the model-cache volume "
                     f"(mounted at {img.workdir}) in compose and Kubernetes: put it there first.")
    for fname, _ in cmd.files:
        lines.append(f"- `{fname}`: read by the command (its options no flag reaches); serve.sh runs beside it, "
                     f"compose mounts it and k8s.yaml carries it as a ConfigMap, both at {CONFIG_DIR}.")
    return "\n".join(lines) + "\n"


def artefacts(result, engine: str | None = None) -> Artefacts:
    """The files for `result`'s winner, on its simulated engine or on `engine` (the same deployment elsewhere)."""
    from vazao.physics.profiles import engine_key

    c = result.winner
    if c is None:
        raise VazaoError("no deployment meets the SLO: nothing to write (see the plan's closest miss)")
    key = engine_key(engine or c.shape.engine)
    if c.disagg:
        from vazao.plan.artefacts_disagg import disagg_artefacts

        note = "" if key == engine_key(c.shape.engine) else (
            f"NOTE: the plan simulated the {c.shape.engine} profile; this is the same deployment on {key}, whose "
            "latency the plan did not predict")
        return disagg_artefacts(result, c, key, note)
    # One replica's command: replicas are separate processes or pods, each with its own GPUs, so none of them
    # is told about the others (no --data-parallel-size); the load balancer in front makes them one endpoint.
    spec = replace(spec_on(c, result.lengths, key)[0], replicas=1)
    cmd = launch_command(key, spec)
    img = _image(cmd.engine)
    note = ""
    if cmd.engine != engine_key(c.shape.engine):
        note = (f"NOTE: the plan simulated the {c.shape.engine} profile; this is the same deployment on {cmd.engine}, "
                "whose latency the plan did not predict")
    header = _header(c, result, cmd, note)
    name = _name(c)
    port = _port(cmd)
    files = (
        ("serve.sh", _serve_sh(c, spec, cmd.engine, header, cmd.files)),
        ("compose.yaml", _compose(c, name, cmd, img, header)),
        ("nginx.conf", _nginx_conf(c.replicas, port, header)),
        ("k8s.yaml", _k8s(c, name, cmd, img, header)),
        ("bench.sh", _bench_sh(result, port, header)),
        ("README.md", _readme(name, c, cmd, img, port, header)),
        *cmd.files,  # read by the command: beside serve.sh, mounted in compose and k8s
    )
    return Artefacts(name, cmd.engine, c.replicas, c.shape.gpus_per_replica, cmd, files)


def check_directory(directory: Path | str, *, force: bool = False) -> Path:
    """A folder to write the artefacts into, checked before any work (vazao.inputs.output_folder): a new
    folder (its parent exists), an empty one, or (force) one with files in it, whose artefacts are replaced."""
    return inputs.output_folder(directory, "deployment folder", force=force)


def write_artefacts(directory: Path | str, result, *, engine: str | None = None,
                    force: bool = False) -> tuple[Path, ...]:
    """Write the winner's serve.sh, compose.yaml, nginx.conf, k8s.yaml, bench.sh and README.md into
    `directory` (created; an existing non-empty one only with force). Returns the paths written."""
    p = check_directory(directory, force=force)
    a = artefacts(result, engine)  # everything is rendered before the first file is written
    try:
        p.mkdir(exist_ok=True)
    except OSError as exc:
        raise VazaoError(f"deployment folder {p} cannot be created: {exc.strerror or exc}") from None
    out = []
    for fname, text in a.files:
        path = p / fname
        inputs.write_text(path, text, fname)
        if fname.endswith(".sh"):
            path.chmod(0o755)
        out.append(path)
    return tuple(out)


__all__ = ["FILES", "IMAGES", "Artefacts", "EngineImage", "artefacts", "check_directory", "write_artefacts"]
