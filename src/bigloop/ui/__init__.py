"""ui: a local web viewer of the trace store (`bigloop ui`): runs, steps, plan graphs and
timelines, live while a run is in progress. Needs the `ui` extra (starlette, uvicorn)."""

from bigloop.ui.server import create_app, running, serve

__all__ = ["create_app", "running", "serve"]
