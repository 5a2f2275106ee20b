"""``descent serve``: a page to play in the browser (``app.create_app``, the Starlette app and its
JSON API) and the boards it draws from each game's position (``board``). Needs the ``web`` extra
(Starlette, uvicorn); nothing else in ``descent`` imports this package."""
