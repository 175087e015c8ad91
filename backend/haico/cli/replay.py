"""`haico replay THREAD FROM TO --profile NAME [--repeats N]`: replay a path with a
model profile, the same as `POST …/{thread_id}/replay`, and wait until the job ends.

The command serves the app in its own process (no port: requests go straight to it)
and acts as a user: the local user when auth is off, else the one `--user NAME`
names. Progress goes to stderr, one line per step; the ended job goes to stdout as
JSON. Exit 0 when the job is done, 1 when it failed, was cancelled or was refused
(code and message on stderr), 2 on a usage error. Ctrl-C cancels the job.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from haico.config import Settings

COMMANDS = ("replay",)


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "replay",
        help="replay a path with a model profile, as new branches",
        description="For each repeat, branch at FROM's parent and re-send the user messages "
        "of FROM … TO (node ids, th_…:k) in order with the profile NAME. Waits for the job "
        "and prints it as JSON.",
    )
    p.add_argument("thread_id")
    p.add_argument("from_node")
    p.add_argument("to_node")
    p.add_argument("--profile", default="default", help="a profile name (default: default)")
    p.add_argument("--repeats", type=int, default=1, help="1 to 5 (default 1)")
    p.add_argument("--user", help="act as this user (default: the local user)")


def run(settings: Settings, args: argparse.Namespace) -> int:
    name = args.user or (settings.local_user_name if settings.auth == "none" else None)
    if name is None:
        print("error: --user NAME is required when HAICO_AUTH=token", file=sys.stderr)
        return 2
    if not 1 <= args.repeats <= 5:
        print("error: --repeats must be 1 to 5", file=sys.stderr)
        return 2
    try:
        job = asyncio.run(_run(settings, name, args))
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(job))
    return 0 if job["state"] == "done" else 1


async def _run(settings: Settings, user_name: str, args: argparse.Namespace) -> dict[str, Any]:
    import httpx

    from haico.db.engine import Database
    from haico.errors import DomainError
    from haico.main import create_app
    from haico.services.access.users import named

    db = Database(settings.sql_url, limits=settings.limits())
    try:
        await named(db, user_name)
    except DomainError as exc:
        raise RuntimeError(f"{exc.code}: {exc.message}") from exc
    finally:
        await db.dispose()
    # Served here as that user: the app's "local user" is the one named.
    local = settings.model_copy(update={"auth": "none", "local_user_name": user_name})
    app = create_app(local)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://haico.cli") as c:
            return await _replay(c, args)


def _error(r: Any) -> RuntimeError:
    try:
        body = r.json()
        return RuntimeError(f"{body.get('code', r.status_code)}: {body.get('message', r.text)}")
    except ValueError:
        return RuntimeError(f"{r.status_code}: {r.text}")


async def _replay(c: Any, args: argparse.Namespace) -> dict[str, Any]:
    profiles = (await c.get("/api/profiles")).json()
    found = [p["id"] for p in profiles if p["name"] == args.profile or p["id"] == args.profile]
    if not found:
        raise RuntimeError(f"not_found: no profile named {args.profile!r}")
    body = {
        "from_node": args.from_node,
        "to_node": args.to_node,
        "profile_id": found[0],
        "repeats": args.repeats,
    }
    r = await c.post(f"/api/conversations/{args.thread_id}/replay", json=body)
    if r.status_code != 202:
        raise _error(r)
    job: dict[str, Any] = r.json()
    shown = -1
    try:
        while job["state"] in ("queued", "running"):
            done, total = job["progress"]["done"], job["progress"]["total"]
            if done != shown:
                print(f"replay {job['id']}: {done}/{total} steps", file=sys.stderr)
                shown = done
            await asyncio.sleep(0.2)
            job = (await c.get(f"/api/jobs/{job['id']}")).json()
    except (KeyboardInterrupt, asyncio.CancelledError):
        job = (await c.post(f"/api/jobs/{job['id']}/cancel")).json()
        raise
    print(
        f"replay {job['id']}: {job['state']} ({job['progress']['done']}/"
        f"{job['progress']['total']} steps)" + (f": {job['error']}" if job["error"] else ""),
        file=sys.stderr,
    )
    return job
