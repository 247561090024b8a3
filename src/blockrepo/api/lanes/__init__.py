"""The fast lanes: element GET, PUT and PATCH by id answered without FastAPI's routing (`read`, `write`),
exactly as the routed operations answer them (`tests/api/test_lanes_differential.py`); `lanes=False` in the
settings leaves every request to the routes."""
