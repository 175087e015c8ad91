"""A test client for the AHP host that validates every message it receives against
the schema set of the version agreed (plus the project's DAG-extension schemas)."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

# Upstream's JSON Schemas (and reducer fixtures), vendored: see vendor/README.md.
VENDOR = Path(__file__).resolve().parent / "vendor"
APP = Path(__file__).resolve().parents[2] / "haico"
DAG = APP / "ahp" / "schemas" / "dag-extension.schema.json"
WORKSPACE_CHANGED = APP / "events" / "schemas" / "haico-workspaceChanged.schema.json"
DAG_ACTIONS = ("ChatHistoryCheckedOutAction", "ChatTurnsPrunedAction")

Json = dict[str, Any]


def schema_dir(version: str) -> Path:
    return VENDOR / ("0.7.0" if version.startswith("0.7.") else "1.0.0") / "schema"


@cache
def merged_defs(version: str) -> Json:
    defs: Json = {}
    for name in ("state", "actions", "commands", "notifications", "errors"):
        defs.update(json.loads((schema_dir(version) / f"{name}.schema.json").read_text())["$defs"])
    defs.update(json.loads(DAG.read_text())["$defs"])
    union = copy.deepcopy(defs["StateAction"])
    # 1.0.0's vendored union has one broken member (`#/$defs/`): leave it out.
    union["oneOf"] = [m for m in union["oneOf"] if m.get("$ref") != "#/$defs/"]
    union["oneOf"] += [{"$ref": f"#/$defs/{n}"} for n in DAG_ACTIONS]
    defs["StateAction"] = union
    return defs


@cache
def validator(version: str, name: str) -> jsonschema.Draft202012Validator:
    schema = {"$ref": f"#/$defs/{name}", "$defs": merged_defs(version)}
    return jsonschema.Draft202012Validator(schema)


@cache
def workspace_changed_validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(WORKSPACE_CHANGED.read_text()))


def check(version: str, name: str, value: Any) -> None:
    errors = sorted(validator(version, name).iter_errors(value), key=lambda e: e.path)
    if errors:
        best = jsonschema.exceptions.best_match(errors)
        raise AssertionError(f"{name} ({version}) invalid: {best.message} at {list(best.path)}")


RESULTS = {
    "initialize": "InitializeResult",
    "subscribe": "SubscribeResult",
    "listSessions": "ListSessionsResult",
    "fetchTurns": "FetchTurnsResult",
    "checkoutChatHistory": "CheckoutChatHistoryResult",
}


def validate_action(version: str, action: Json) -> None:
    kind = str(action.get("type"))
    if kind == "haico/workspaceChanged":
        workspace_changed_validator().validate(action)
    elif kind.startswith("haico/"):
        assert isinstance(action.get("threadId"), str), action  # the project's own catalogue
    else:
        check(version, "StateAction", action)


def validate_envelope(version: str, envelope: Json) -> None:
    shell = {**envelope, "action": {"type": "session/titleChanged", "title": ""}}
    check(version, "ActionEnvelope", shell)
    validate_action(version, envelope["action"])


class RpcFailure(Exception):
    def __init__(self, error: Json) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = error.get("code")
        self.message = error.get("message")
        self.data = error.get("data")


class AhpClient:
    """One connection. `actions` collects every `action` notification received."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.version = "1.0.0"
        self.next_id = 0
        self.pending: dict[int, tuple[str, asyncio.Future[Any]]] = {}
        self.actions: list[Json] = []
        self.notifications: list[Json] = []
        self.errors: list[Json] = []
        self.invalid: list[str] = []  # messages that failed validation
        self.received = 0
        self.arrived = asyncio.Event()
        self.task = asyncio.create_task(self._read())
        self.close_code: int | None = None
        self.broken = ""

    @classmethod
    async def open(cls, base_url: str, *, token: str | None = None, **kw: Any) -> AhpClient:
        url = base_url.replace("http://", "ws://") + "/ahp"
        headers = {"Authorization": f"Bearer {token}"} if token else None
        ws = await connect(url, additional_headers=headers, max_size=None, **kw)
        return cls(ws)

    async def _read(self) -> None:
        raw: str | bytes = ""
        try:
            async for raw in self.ws:
                msg = json.loads(raw)
                self.received += 1
                try:
                    self._check(msg)
                except AssertionError as exc:
                    self.invalid.append(f"{exc}: {json.dumps(msg)[:2000]}")
                if "id" in msg and msg.get("id") in self.pending:
                    _, fut = self.pending.pop(msg["id"])
                    if not fut.done():
                        if "error" in msg:
                            fut.set_exception(RpcFailure(msg["error"]))
                        else:
                            fut.set_result(msg.get("result"))
                elif msg.get("method") == "action":
                    self.actions.append(msg["params"])
                elif "method" in msg:
                    self.notifications.append(msg)
                else:
                    self.errors.append(msg)
                self.arrived.set()
        except ConnectionClosed:
            pass
        except Exception as exc:
            # The reader itself failed on a message (the connection may still be open):
            # say so, with the message, instead of a bare "closed None".
            self.broken = f"{exc!r} while reading {raw[:500]!r}"
            raise
        finally:
            self.close_code = self.ws.close_code
            reason = f"closed {self.ws.close_code}"
            if self.broken:
                reason = f"the test client's reader stopped: {self.broken}"
            for _, fut in self.pending.values():
                if not fut.done():
                    fut.set_exception(ConnectionError(reason))
            self.arrived.set()

    def _check(self, msg: Json) -> None:
        assert msg.get("jsonrpc") == "2.0", msg
        if "error" in msg:
            error = msg["error"]
            codes = set(merged_defs(self.version)["AhpErrorCode"]["enum"])
            codes |= set(merged_defs(self.version)["JsonRpcErrorCode"]["enum"])
            assert error["code"] in codes, error
            assert isinstance(error["message"], str)
            if error["code"] == -32005:
                assert error["data"]["supportedVersions"] == ["1.0.0", "0.9.0", "0.7.0"]
            if error["code"] == -32012:
                assert error["message"] == "Checkout would discard changes"
                check(self.version, "CheckoutWouldDiscardChangesErrorData", error["data"])
            return
        if "result" in msg:
            method = self.pending.get(msg["id"], ("", None))[0]
            result = msg["result"]
            if method in RESULTS:
                check(self.version, RESULTS[method], result)
            if method == "reconnect":
                name = (
                    "ReconnectReplayResult"
                    if result["type"] == "replay"
                    else "ReconnectSnapshotResult"
                )
                # The envelopes' actions are checked one by one below (the project's
                # own `haico/*` actions are not in the AHP union).
                shells = [
                    {**e, "action": {"type": "session/titleChanged", "title": ""}}
                    for e in result.get("actions", [])
                ]
                check(
                    self.version,
                    name,
                    {**result, "actions": shells} if "actions" in result else result,
                )
                for envelope in result.get("actions", []):
                    validate_envelope(self.version, envelope)
            return
        method = msg.get("method")
        if method == "action":
            validate_envelope(self.version, msg["params"])
        elif method == "root/sessionAdded":
            check(self.version, "SessionAddedParams", msg["params"])
        elif method == "root/sessionRemoved":
            check(self.version, "SessionRemovedParams", msg["params"])
        else:
            raise AssertionError(f"unexpected notification {msg}")

    async def request(self, method: str, params: Json | None = None, *, within: float = 30) -> Any:
        self.next_id += 1
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = (method, fut)
        await self.ws.send(
            json.dumps(
                {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}}
            )
        )
        return await asyncio.wait_for(fut, within)

    async def notify(self, method: str, params: Json) -> None:
        await self.ws.send(json.dumps({"jsonrpc": "2.0", "method": method, "params": params}))

    async def initialize(self, versions: list[str] | None = None, **params: Any) -> Json:
        versions = versions or ["1.0.0"]
        result: Json = await self.request(
            "initialize",
            {"channel": "ahp-root://", "protocolVersions": versions, "clientId": "test", **params},
        )
        self.version = result["protocolVersion"]
        return result

    async def wait_for(self, pred: Callable[[Json], bool], *, within: float = 30) -> Json:
        deadline = time.monotonic() + within
        seen = 0
        while True:
            assert not self.invalid, self.invalid[0]
            for envelope in self.actions[seen:]:
                if pred(envelope):
                    return envelope
            seen = len(self.actions)
            left = deadline - time.monotonic()
            if left <= 0 or self.task.done():
                raise AssertionError(
                    f"no matching action; got {[a['action']['type'] for a in self.actions]}"
                )
            self.arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.arrived.wait(), left)

    async def close(self) -> None:
        await self.ws.close()
        try:
            await asyncio.wait_for(self.task, 5)
        except Exception:
            self.task.cancel()
