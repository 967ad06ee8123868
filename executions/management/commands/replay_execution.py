"""manage.py replay_execution <id> [--at-seq N] [--verify] [--rebuild] [--against-version N]

Folds an execution's log and prints what the engine knew: a per-node table and the
timeline. --verify checks the hash chain (exits 1 naming the first seq whose hash does not
match) and re-derives every orchestrator decision from the events before it (exits 1 at
the first divergence); --rebuild rewrites the projections from the log.
--against-version N [--input JSON] prints, as JSON, what the recorded history would have
done under version N of its workflow (POST /executions/{id}/replay with dry_run).
"""

from __future__ import annotations

import gc
import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError, transaction
from tqdm import tqdm

from executions import history_file
from executions.definitions import definition_for
from executions.engine.chain import Linked, first_break
from executions.engine.events import Event
from executions.engine.fold import fold
from executions.engine.state import ExecutionState
from executions.engine.verify import verify_log
from executions.kernel.lock import lock_execution, looking_after
from executions.kernel.log import engine_events, load_state, verifiable_log
from executions.kernel.projections import differences, rebuild
from executions.models import Execution
from executions.retention import archive
from executions.retention.tombstones import tombstone_of
from executions.services import whatif
from workflows.dsl import Definition, DefinitionError
from workflows.dsl.parser import parse_definition


class Command(BaseCommand):
    help = "Fold an execution's event log; print, verify or rebuild from it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("execution_id", nargs="?", help="(not with --from-file)")
        parser.add_argument("--at-seq", type=int, default=None, help="fold only the first N events")
        parser.add_argument("--verify", action="store_true", help="re-derive every decision")
        parser.add_argument("--rebuild", action="store_true", help="rewrite the projections")
        parser.add_argument("--quiet", action="store_true", help="no table or timeline")
        parser.add_argument(
            "--against-version",
            type=int,
            default=None,
            help="print where the history would diverge under this version (JSON)",
        )
        parser.add_argument(
            "--input", default=None, help="with --against-version: another input (JSON)"
        )
        parser.add_argument(
            "--export", type=Path, default=None, help="write the history to this JSON file"
        )
        parser.add_argument(
            "--from-file",
            type=Path,
            default=None,
            help="replay a history written by --export instead (no database rows needed)",
        )

    def handle(self, *args, **options) -> None:
        if options["from_file"] is not None:
            if options["execution_id"] or options["rebuild"] or options["against_version"]:
                raise CommandError(
                    "--from-file replays the file alone: no execution id, --rebuild or "
                    "--against-version with it"
                )
            self._from_file(options["from_file"], options)
            return
        if not options["execution_id"]:
            raise CommandError("give an execution id (or --from-file FILE)")
        try:
            execution_id = uuid.UUID(options["execution_id"])
        except ValueError:
            raise CommandError(f"{options['execution_id']!r} is not an execution id") from None
        execution = (
            Execution.objects.select_related("workflow", "version").filter(pk=execution_id).first()
        )
        if execution is None:
            raise CommandError(f"no execution {execution_id}")
        if options["against_version"] is not None:
            self._against(execution, options["against_version"], options["input"])
            return
        if options["export"] is not None:
            self._export(execution, options["export"])
            return
        at_seq = options["at_seq"]
        if at_seq is not None and not 0 <= at_seq <= execution.last_seq:
            raise CommandError(f"--at-seq must be between 0 and {execution.last_seq}")
        bar = tqdm(
            total=at_seq if at_seq is not None else execution.last_seq,
            unit="ev",
            disable=execution.last_seq < 10_000 or None,
            file=self.stderr,
        )
        if options["verify"]:
            with _collector_paused():
                events, links = verifiable_log(execution.pk)
                definition = definition_for(execution.version_id)
                state = self._verified(
                    definition, events, links, execution.last_hash, str(execution.pk), at_seq, bar
                )
            events = events if at_seq is None else events[:at_seq]
        else:
            events = engine_events(execution.pk, upto_seq=at_seq)
            state = fold(events, execution_id=str(execution.pk))
        bar.close()
        if options["rebuild"]:
            with looking_after(), transaction.atomic():
                locked = lock_execution(execution.pk).execution
                full = load_state(locked) if at_seq is None else state
                rebuild(locked, full, definition_for(locked.version_id))
            self.stdout.write("rebuilt: projections rewritten from the log")
        if not options["quiet"]:
            header = (
                f"execution {execution.pk}  workflow {execution.workflow.name} "
                f"v{execution.version.version}"
            )
            self._print(header, definition_for(execution.version_id), state, events)
        if at_seq is None and not options["rebuild"]:
            drift = differences(execution, state)
            if drift:
                self.stdout.write(self.style.WARNING("projection differs from the log:"))
                for line in drift:
                    self.stdout.write(f"  {line}")

    def _against(self, execution: Execution, number: int, raw_input: str | None) -> None:
        extra = {}
        if raw_input is not None:
            try:
                extra["input"] = json.loads(raw_input)
            except ValueError as exc:
                raise CommandError(f"--input is not JSON: {exc}") from None
        try:
            version = whatif.version_of(execution, number)
        except ValidationError as exc:
            raise CommandError(f"--against-version: {exc.messages[0]}") from None
        report = whatif.replay_report(execution=execution, version=version, **extra)
        self.stdout.write(json.dumps(report.to_json(), indent=2, default=str))

    def _verified(
        self,
        definition: Definition,
        events: list[Event],
        links: list[Linked],
        last_hash: str | None,
        execution_id: str,
        at_seq: int | None,
        bar: tqdm,
    ) -> ExecutionState:
        """The chain checked whole (whatever --at-seq says: a later edit is an edit all the
        same), then every decision of the first at_seq events re-derived; CommandError at
        the first break or divergence. The folded state."""
        with _collector_paused():
            broken = first_break(links, last_hash=last_hash)
            if broken is not None:
                bar.close()
                raise CommandError(str(broken))
            events = events if at_seq is None else events[:at_seq]

            def advanced(n: int) -> None:
                bar.update(n)

            found, state = verify_log(
                definition, events, execution_id=execution_id, progress=advanced
            )
        bar.close()
        if found is not None:
            raise CommandError(str(found))
        self.stdout.write(
            f"verified: {len(events)} events, hash chain intact, every decision re-derived"
        )
        return state

    def _from_file(self, path: Path, options) -> None:
        """A history exported by --export (or a golden history), replayed with no rows."""
        try:
            history = history_file.read(json.loads(path.read_text()))
        except OSError as exc:
            raise CommandError(f"--from-file: {exc}") from None
        except ValueError as exc:  # not JSON, or not a history (HistoryFileError)
            raise CommandError(f"--from-file {path}: {exc}") from None
        try:
            definition = parse_definition(history.definition, stored=True)
        except DefinitionError as exc:
            raise CommandError(
                f"--from-file {path}: the definition does not parse: {exc}"
            ) from None
        at_seq = options["at_seq"]
        if at_seq is not None and not 0 <= at_seq <= len(history.events):
            raise CommandError(f"--at-seq must be between 0 and {len(history.events)}")
        bar = tqdm(total=at_seq or len(history.events), unit="ev", disable=True, file=self.stderr)
        if options["verify"]:
            # First: a file that does not end where the purged log ended says so plainly.
            self._against_tombstone(path, history)
            state = self._verified(
                definition,
                history.events,
                history.links,
                history.last_hash,
                history.execution_id,
                at_seq,
                bar,
            )
        else:
            state = fold(history.events[:at_seq], execution_id=history.execution_id)
        if not options["quiet"]:
            header = (
                f"execution {history.execution_id}  workflow {history.workflow} v{history.version}"
            )
            self._print(header, definition, state, history.events[:at_seq])

    def _against_tombstone(self, path: Path, history: history_file.History) -> None:
        """A purged execution's archive: its chain must end at the tombstone's last hash,
        with as many events. Checked where the tombstone is in this database."""
        try:
            tombstone = tombstone_of(uuid.UUID(history.execution_id))
        except (ValueError, DatabaseError):  # not an id, or a database without the table
            tombstone = None
        if tombstone is None:
            return
        broken = first_break(history.links, last_hash=tombstone.last_hash)
        if broken is not None or len(history.events) != tombstone.events:
            raise CommandError(
                f"--from-file {path}: does not match the tombstone of execution {tombstone.id} "
                f"({tombstone.events} events, last hash {tombstone.last_hash[:12]}…): "
                f"{broken or f'{len(history.events)} events'}"
            )
        self.stdout.write(
            f"matches the tombstone of purged execution {tombstone.id}: {tombstone.events} "
            f"events, last hash {tombstone.last_hash[:12]}…"
        )

    def _export(self, execution: Execution, path: Path) -> None:
        count = archive.export(execution, path)
        self.stdout.write(f"exported {count} events of execution {execution.pk} to {path}")

    def _print(self, header: str, definition: Definition, state, events) -> None:
        write = self.stdout.write
        write(f"{header}  status {state.status}  events {state.last_seq}")
        write(f"{'node':<24} {'status':<10} {'att':>3} {'retries':>7}  started → ended")
        for node in definition.nodes:
            item = state.node(node.id)
            span = f"{_t(item.started_at)} → {_t(item.ended_at)}"
            write(
                f"{node.id:<24} {item.status:<10} {item.attempt:>3} {item.retry_count:>7}  {span}"
            )
        write("timeline:")
        for event in events[-200:] if len(events) > 200 else events:
            where = (
                f"{event.node_id or ''}#{event.attempt}" if event.attempt else event.node_id or ""
            )
            write(
                f"  {event.seq:>6} {_t(event.timestamp)} {event.source:<7} {event.type:<22} {where}"
            )
        if state.error:
            write(f"error: {state.error}")
        if state.output is not None:
            write(f"output: {state.output}")


def _t(moment) -> str:
    return moment.strftime("%H:%M:%S.%f")[:-3] if moment else "-"


@contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while a log is read and verified: it holds two objects
    per event and makes millions more, none in a cycle (reference counting frees them),
    and each full collection walked them all again (a quarter of the command's CPU time at
    20,000 events). Whatever cycles appear are collected once it resumes. Nests."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
