"""The AHP host: the same services as the REST face, behind JSON-RPC over WebSocket."""
