"""Hooks for the api stage's schemathesis run (SCHEMATHESIS_HOOKS).

One rule of the API spans two query parameters, which an OpenAPI document
cannot state: a listing cursor names the listing it came from (`p.` for
pending timers, `c.` for claimed and running ones, `k.` for parked ones),
and `GET /v1/timers`
answers 400 when it is given with another `state` (none means pending).
Queries that pair a cursor with another listing's state are left out of
the generated ones; every other query, valid or not, is still generated.
"""

import schemathesis


@schemathesis.hook
def filter_query(ctx, query):
    operation = getattr(ctx, "operation", None)
    if operation is None or operation.method.upper() != "GET" or operation.path != "/v1/timers":
        return True
    if not isinstance(query, dict):
        return True
    cursor = query.get("cursor")
    if not isinstance(cursor, str) or not cursor:
        return True
    state = query.get("state")
    listings = {None: "p", "pending": "p", "claimed": "c", "running": "c", "parked": "k"}
    if state not in listings:
        return True
    expected = listings[state]
    return cursor[0] == expected
