"""Who a bearer token names, for the faces: one resolution for REST and AHP."""
