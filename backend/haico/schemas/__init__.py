"""Wire shapes (pydantic) by feature, shared by the services and both faces."""
