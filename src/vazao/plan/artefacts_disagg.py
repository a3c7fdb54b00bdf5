"""A disaggregated winner (prefill and decode pools) as the files users run it with: `serve.sh` (every server on
one machine with its GPUs, then the router), `compose.yaml` (a service per server, the router as the endpoint),
`k8s.yaml` (a Deployment and Service per server, so the router can name each one, the router's Deployment and
Service as the endpoint, the model-cache PVC), `bench.sh` and a README. The servers' commands and the router's
are plan.emit.disagg_launch's, each checked against its program's flag data; only the hosts in the router's
URLs change with where the servers run."""

from __future__ import annotations

import re

from vazao import inputs
from vazao.plan.artefacts import (
    TOKEN_ENV,
    TOKEN_SECRET,
    Artefacts,
    EngineImage,
    _bench_sh,
    _cache_gib,
    _comment,
    _container_argv,
    _gpu_ids,
    _header,
    _image,
    _name,
    gpu_container,
)
from vazao.plan.emit import DisaggLaunch, disagg_launch

DISAGG_FILES = ("serve.sh", "compose.yaml", "k8s.yaml", "bench.sh", "README.md")


def _router_for(launch: DisaggLaunch, host_of) -> object:
    """The router's command with each server named by `host_of(instance)` (a compose service, a Kubernetes
    Service), checked again like the one-host command."""
    from vazao.plan.commands import router_command

    inst = launch.instances
    return router_command(launch.engine, [(f"http://{host_of(i)}:{i.port}", i.handshake_port) for i in inst
                                          if i.role == "prefill"],
                          [f"http://{host_of(i)}:{i.port}" for i in inst if i.role == "decode"],
                          int(launch.router.argv[launch.router.argv.index("--port") + 1]))


def _serve_sh(c, launch: DisaggLaunch, header: list[str]) -> str:
    per = c.shape.gpus_per_replica
    body = ["set -eu", "trap 'kill 0' INT TERM"]
    for k, i in enumerate(launch.instances):
        body.append(f"CUDA_VISIBLE_DEVICES={','.join(_gpu_ids(k, per))} {i.command.shell} &")
    body += [launch.router.shell + " &", "wait"]
    lines = [*header, f"{len(launch.instances)} servers on this machine ({per} GPU(s) each) on ports "
                      f"{launch.instances[0].port}-{launch.instances[-1].port}, the router on "
                      f":{_endpoint(launch)}; start the router once the servers answer"]
    return "#!/bin/sh\n" + _comment(lines) + "\n".join(body) + "\n"


def _endpoint(launch: DisaggLaunch) -> int:
    return int(launch.router.argv[launch.router.argv.index("--port") + 1])


def _svc(i) -> str:
    return f"{i.role}-{i.index}"


def _compose(c, name: str, launch: DisaggLaunch, img: EngineImage, header: list[str]) -> str:
    per = c.shape.gpus_per_replica
    services: dict = {}
    for k, i in enumerate(launch.instances):
        entrypoint, args = _container_argv(i.command, img)
        svc: dict = {"image": img.image, "entrypoint": list(entrypoint), "command": list(args),
                     "environment": [TOKEN_ENV, *(f"{a}={b}" for a, b in img.env)],
                     "volumes": [f"model-cache:{img.cache}"]}
        if img.shm and per > 1:
            svc["ipc"] = "host"
        svc["deploy"] = {"resources": {"reservations": {"devices": [
            {"driver": "nvidia", "device_ids": _gpu_ids(k, per), "capabilities": ["gpu"]}]}}}
        svc["restart"] = "unless-stopped"
        services[_svc(i)] = svc
    router = _router_for(launch, _svc)
    port = _endpoint(launch)
    services["router"] = {"image": img.image, "entrypoint": [router.argv[0]], "command": list(router.argv[1:]),
                          "ports": [f"{port}:{port}"], "depends_on": [_svc(i) for i in launch.instances],
                          "restart": "unless-stopped"}
    doc = {"name": name, "services": services, "volumes": {"model-cache": {}}}
    lines = [*header, f"image {img.image} ({img.source}); the router (sglang_router) runs in the same image, on "
                      f":{port}", f"run: {TOKEN_ENV}=... docker compose up -d  (NVIDIA Container Toolkit)"]
    return _comment(lines) + inputs.dump_yaml(doc, sort_keys=False, default_flow_style=False)


def _k8s(c, name: str, launch: DisaggLaunch, img: EngineImage, header: list[str]) -> str:
    per = c.shape.gpus_per_replica
    docs: list[dict] = []

    def labels(part: str) -> dict:
        return {"app.kubernetes.io/name": name, "app.kubernetes.io/component": part,
                "app.kubernetes.io/managed-by": "vazao"}

    def k8s_name(part: str) -> str:
        return re.sub(r"[^a-z0-9-]+", "-", f"{name}-{part}")[:63].strip("-")

    def deployment(part: str, container: dict, volumes: list[dict]) -> dict:
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": k8s_name(part),
                                                                            "labels": labels(part)},
                "spec": {"replicas": 1, "strategy": {"type": "Recreate"},
                         "selector": {"matchLabels": {"app.kubernetes.io/name": name,
                                                      "app.kubernetes.io/component": part}},
                         "template": {"metadata": {"labels": labels(part)},
                                      "spec": {"containers": [container], "volumes": volumes}}}}

    def service(part: str, ports: list[dict]) -> dict:
        return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": k8s_name(part), "labels": labels(part)},
                "spec": {"selector": {"app.kubernetes.io/name": name, "app.kubernetes.io/component": part},
                         "ports": ports}}

    for i in launch.instances:
        part = _svc(i)
        entrypoint, args = _container_argv(i.command, img)
        ports = [{"name": "http", "containerPort": i.port}]
        if i.handshake_port:
            ports.append({"name": "bootstrap", "containerPort": i.handshake_port})
        container, volumes = gpu_container(part, img, entrypoint, args, ports, per, name)
        docs.append(deployment(part, container, volumes))
        docs.append(service(part, [{"name": p["name"], "port": p["containerPort"], "targetPort": p["name"]}
                                   for p in ports]))
    router = _router_for(launch, lambda i: k8s_name(_svc(i)))
    port = _endpoint(launch)
    docs.append(deployment("router", {"name": "router", "image": img.image, "command": [router.argv[0]],
                                      "args": list(router.argv[1:]),
                                      "ports": [{"name": "http", "containerPort": port}]}, []))
    docs.append(service("router", [{"name": "http", "port": port, "targetPort": "http"}]))
    docs.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                 "metadata": {"name": f"{name}-model-cache", "labels": labels("model-cache")},
                 "spec": {"accessModes": ["ReadWriteMany"],
                          "resources": {"requests": {"storage": f"{_cache_gib(c.shape.model)}Gi"}}}})
    for d in docs:  # Kubernetes wants a Deployment with no volumes to say so by leaving the key out
        spec = d.get("spec", {}).get("template", {}).get("spec")
        if spec is not None and not spec["volumes"]:
            del spec["volumes"]
    lines = [*header, f"image {img.image} ({img.source}); every server its own Deployment and Service so that the "
                      f"router names each; the router's Service is the endpoint on :{port}",
             f"run: kubectl create secret generic {TOKEN_SECRET} --from-literal=token=\"${TOKEN_ENV}\"; "
             "kubectl apply -f k8s.yaml"]
    return _comment(lines) + inputs.dump_yaml_all(docs, sort_keys=False, default_flow_style=False)


def _readme(c, name: str, launch: DisaggLaunch, img: EngineImage, header: list[str]) -> str:
    p, d = c.disagg
    port = _endpoint(launch)
    lines = [f"# {header[0]}", "", *header[1:3], "",
             f"- `serve.sh`: {p} prefill and {d} decode {launch.engine} servers on one machine "
             f"({c.shape.gpus_per_replica} GPU(s) each), then the router on :{port}; `sh serve.sh`.",
             f"- `compose.yaml`: a service per server of `{img.image}`, the router on :{port}; "
             f"`{TOKEN_ENV}=... docker compose up -d`.",
             f"- `k8s.yaml`: a Deployment and Service per server, the router's Deployment and Service {name}-router, "
             f"the model-cache PVC; `kubectl apply -f k8s.yaml`, then `kubectl port-forward service/{name}-router "
             f"{port}:{port}`.",
             f"- `bench.sh`: `vazao bench` at the planned traffic and SLO against http://127.0.0.1:{port}/v1.",
             "- The KV caches move between servers over the Mooncake transfer engine (RDMA across hosts, NVLink on "
             "one): the servers' notes in serve.sh say what it needs."]
    return "\n".join(lines) + "\n"


def disagg_artefacts(result, c, key: str, engine_note: str) -> Artefacts:
    launch = disagg_launch(c, result.lengths, key)
    img = _image(launch.engine)
    first = launch.instances[0].command
    header = _header(c, result, first, engine_note)
    header = [*header, f"disaggregated: {c.disagg[0]} prefill + {c.disagg[1]} decode servers behind the router"]
    name = _name(c)
    port = _endpoint(launch)
    files = (
        ("serve.sh", _serve_sh(c, launch, header)),
        ("compose.yaml", _compose(c, name, launch, img, header)),
        ("k8s.yaml", _k8s(c, name, launch, img, header)),
        ("bench.sh", _bench_sh(result, port, header)),
        ("README.md", _readme(c, name, launch, img, header)),
    )
    return Artefacts(name, launch.engine, c.replicas, c.shape.gpus_per_replica, first, files)
