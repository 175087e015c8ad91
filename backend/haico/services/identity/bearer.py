"""A bearer token to the principal it names, resolved once per request or connection:
a share link (`sh_…`), a study participant (`pt_…`) or a user's API token. Unknown,
revoked or expired → 401. What the principal may then do is the access rule's."""

from __future__ import annotations

from haico.db.engine import Database
from haico.services.access.principal import Principal
from haico.services.sharing import shares
from haico.services.studies import joining


async def authenticate(db: Database, *, token: str | None) -> Principal:
    if token is not None and token.startswith(joining.PARTICIPANT_PREFIX):
        return await joining.authenticate(db, token=token)
    return await shares.authenticate(db, token=token)
