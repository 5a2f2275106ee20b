"""A tiny GTP engine for the tests of outside engines: a real protocol peer that misbehaves on
purpose. ``python gtp_peer.py MODE``: ``illegal`` answers ``genmove`` with the last vertex played
(occupied), ``crash`` exits with status 3 on ``genmove``, ``refuse`` answers ``? no`` to it."""
import sys

mode = sys.argv[1] if len(sys.argv) > 1 else "illegal"
last = "A1"
for line in sys.stdin:
    words = line.split()
    if not words:
        continue
    ident = words.pop(0) if words[0].isdigit() else ""
    cmd = words[0]
    if cmd == "genmove":
        if mode == "crash":
            sys.exit(3)
        if mode == "refuse":
            print(f"?{ident} no\n", flush=True)
            continue
        print(f"={ident} {last}\n", flush=True)
        continue
    if cmd == "play" and len(words) == 3:
        last = words[2]
    print(f"={ident} 2\n" if cmd == "protocol_version" else f"={ident}\n", flush=True)
    if cmd == "quit":
        break
