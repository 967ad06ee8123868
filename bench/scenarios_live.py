"""Scenarios a-c, run by live workers: throughput and hop latency against raw Celery, and
the start latency through the API."""

from __future__ import annotations

import time
from itertools import pairwise

from bench.base import BenchBase
from bench.definitions import chain_definition, fanout_definition, make_version, noop
from bench.processes import free_port
from bench.stats import percentile, summary
from executions.supervisor import gunicorn_argv


class LiveScenarios(BenchBase):
    """Scenarios a-c: throughput, latency, start."""

    # a. throughput ------------------------------------------------------------------

    def throughput(self) -> None:
        from celery import chain, chord

        from executions.models import Event

        width = self.v.fanout
        total = width + 2
        version = make_version("fanout", fanout_definition(width))
        engine_runs, raw_runs = [], []
        for _ in range(self.v.fanout_runs):
            t0, execution_id = self.start_engine(version)
            self.wait_engine(execution_id, 900)
            end = Event.objects.get(execution_id=execution_id, type="workflow_completed")
            engine_runs.append(total / (end.timestamp.timestamp() - t0))

            key = self.key("chord")
            header = [self.sig() for _ in range(width)]
            t0 = time.time()
            chain(self.sig(), chord(header, self.sig(key))).apply_async()
            (finished,) = self.wait_stamps(key, 1, 900)
            raw_runs.append(total / (finished - t0))
        self.figures["throughput_engine_nodes_per_s"] = summary(engine_runs, "nodes/s")
        self.figures["throughput_raw_tasks_per_s"] = summary(raw_runs, "tasks/s")
        ratios = [e / r for e, r in zip(engine_runs, raw_runs, strict=True)]
        self.figures["throughput_ratio"] = summary(ratios, "engine/raw")
        self.notes["throughput_nodes"] = total

    # b. latency ---------------------------------------------------------------------

    def latency(self) -> None:
        from celery import chain

        from executions.models import Event

        length = self.v.chain
        version = make_version("chain", chain_definition(length))
        e50, e99, c50, c99, r50, r99 = [], [], [], [], [], []
        for _ in range(self.v.chain_runs):
            _, execution_id = self.start_engine(version)
            self.wait_engine(execution_id, 600)
            rows = Event.objects.filter(
                execution_id=execution_id, type__in=["task_started", "task_completed"]
            ).values_list("type", "node_id", "timestamp")
            started = {n: t.timestamp() for kind, n, t in rows if kind == "task_started"}
            done = {n: t.timestamp() for kind, n, t in rows if kind == "task_completed"}
            ids = [f"c{i}" for i in range(length)]
            hops = [started[b] - started[a] for a, b in pairwise(ids)]
            gaps = [started[b] - done[a] for a, b in pairwise(ids)]
            e50.append(percentile(hops, 50) * 1000)
            e99.append(percentile(hops, 99) * 1000)
            c50.append(percentile(gaps, 50) * 1000)
            c99.append(percentile(gaps, 99) * 1000)

            key = self.key("chain")
            chain(*[self.sig(key) for _ in range(length)]).apply_async()
            stamps = self.wait_stamps(key, length, 600)
            raw_hops = [b - a for a, b in pairwise(stamps)]
            r50.append(percentile(raw_hops, 50) * 1000)
            r99.append(percentile(raw_hops, 99) * 1000)
        self.figures["latency_engine_hop_p50_ms"] = summary(e50, "ms")
        self.figures["latency_engine_hop_p99_ms"] = summary(e99, "ms")
        self.figures["latency_engine_completed_to_started_p50_ms"] = summary(c50, "ms")
        self.figures["latency_engine_completed_to_started_p99_ms"] = summary(c99, "ms")
        self.figures["latency_raw_hop_p50_ms"] = summary(r50, "ms")
        self.figures["latency_raw_hop_p99_ms"] = summary(r99, "ms")
        self.figures["latency_p50_ratio"] = summary(
            [e / r for e, r in zip(e50, r50, strict=True)], "engine/raw"
        )
        self.figures["latency_p99_ratio"] = summary(
            [e / r for e, r in zip(e99, r99, strict=True)], "engine/raw"
        )

    # c. start latency ---------------------------------------------------------------

    def start_latency(self) -> None:
        import httpx
        from django.contrib.auth.models import Group, User
        from rest_framework.authtoken.models import Token

        from executions.models import Event

        make_version("single", {"nodes": [noop("only")]})
        user = User.objects.create_user("bench", password="bench-pw")
        # Reading and starting executions needs the permissions the operator role holds.
        user.groups.set(Group.objects.filter(name="operator"))
        token = Token.objects.create(user=user)
        port = free_port()
        self.procs.start("gunicorn", gunicorn_argv(port))
        base = f"http://127.0.0.1:{port}"
        headers = {"Authorization": f"Token {token.key}"}
        with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if client.get("/executions").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise TimeoutError("gunicorn did not answer")
                self.procs.check()
                time.sleep(0.2)
            for _ in range(5):  # warm both gunicorn workers
                client.post("/executions", json={"workflow": "single"})
            time.sleep(0.5)
            p50, p99, post50 = [], [], []
            for _ in range(self.v.start_runs):
                latencies, posts = [], []
                for _ in range(self.v.starts):
                    t0 = time.time()
                    response = client.post("/executions", json={"workflow": "single"})
                    posted = time.time()
                    if response.status_code != 201:
                        raise RuntimeError(f"POST /executions: {response.status_code}")
                    execution_id = response.json()["id"]
                    deadline = time.monotonic() + 30
                    while True:
                        started = (
                            Event.objects.filter(execution_id=execution_id, type="task_started")
                            .values_list("timestamp", flat=True)
                            .first()
                        )
                        if started is not None:
                            break
                        if time.monotonic() > deadline:
                            raise TimeoutError(f"{execution_id}: no task_started")
                        time.sleep(0.002)
                    latencies.append((started.timestamp() - t0) * 1000)
                    posts.append((posted - t0) * 1000)
                    time.sleep(0.02)  # let the node finish: starts do not queue up
                p50.append(percentile(latencies, 50))
                p99.append(percentile(latencies, 99))
                post50.append(percentile(posts, 50))
        self.procs.stop("gunicorn")
        self.figures["start_p50_ms"] = summary(p50, "ms")
        self.figures["start_p99_ms"] = summary(p99, "ms")
        self.figures["start_post_response_p50_ms"] = summary(post50, "ms")
