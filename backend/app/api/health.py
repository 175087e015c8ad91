"""REST: health."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from sqlalchemy import text

from app.api.deps import DbDep
from app.schemas import HealthOut

router = APIRouter(prefix="/api", tags=["health"])


@router.get("/health", response_model=HealthOut)
async def health(db: DbDep) -> JSONResponse:
    backend = "sqlite" if db.is_sqlite else "postgresql"
    try:
        async with db.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
        ok = True
    except Exception:
        ok = False
    body = HealthOut(
        status="ok" if ok else "degraded", database="ok" if ok else "unreachable", backend=backend
    )
    return JSONResponse(body.model_dump(), status_code=200 if ok else 503)
