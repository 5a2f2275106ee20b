"""Interactive play in the terminal against an agent (``descent play``).

The board is drawn after every move; the person types moves in the game's notation or a command:
``undo`` (take back your last move and the agent's reply), ``hint`` (the best move by a separate
strongest-level analysis, which leaves the playing agent's tree alone), ``moves``
(the legal moves), ``resign``, ``quit`` (leave: the game counts as resigned), ``help``. A bad or illegal move is explained and asked again. The
agent's move is announced in words. ``--plain`` prints text lines only (no colours): a screen reader
can follow the game. At the end the game record is printed and can be saved.
"""
from __future__ import annotations

import sys

import click

from games.errors import GameError
from descent.api import Opponent
from descent.shipped import is_shipped, specs_for
from descent import strength
from descent.strength import rating_text

HELP = ("Type a move in the game's notation{example}, or one of: moves (list the legal moves), "
        "hint (the strongest move, by a separate analysis), undo (take back your last move), resign, quit (leave the game), help.")


def _colour(drawing: str, plain: bool) -> str:
    if plain:
        return drawing
    out = []
    for line in drawing.splitlines():
        out.append("".join(click.style(ch, fg="red", bold=True) if ch == "x" else
                           click.style(ch, fg="blue", bold=True) if ch == "o" else ch for ch in line))
    return "\n".join(out)


def _ask(prompt: str) -> str | None:
    try:
        return input(prompt)
    except EOFError:
        return None


def play(game: str, opponent, seat: int, plain: bool, save: str | None = None) -> int:
    """Run one game; returns the person's result (+1 win, 0 draw, -1 loss or resignation)."""
    bot: Opponent = opponent
    state = bot.state
    players = bot.info.players
    me, it = players[seat], players[1 - seat]
    say = click.echo
    legal = state.legal_actions_list()
    example = f", for example {state.move_to_str(legal[0])}" if legal else ""
    say(f"{bot.info.spec}: you play {me} ({'first' if seat == 0 else 'second'}), the computer plays "
        f"{it}. Level: {bot.level}.")
    rating = getattr(bot, "rating", None)
    if getattr(bot, "elo_note", None):
        say(f"{bot.elo_note}.")
    elif rating:
        say(f"Rated {rating_text(rating, rating['anchor'])} (docs/strength.md).")
        table = strength.table(bot.info.spec)
        note = strength.level_notes(table).get(bot.level) if table else None
        if note:
            say(f"The {bot.level} level: {note}.")
    c = getattr(bot, "calibration", None)
    if c:
        say(f"Calibrated budget: {c['unit']}={c['budget']} (balanced against {c['against']}, "
            f"{c['games']} calibration games{', shipped' if c.get('shipped') else ''}).")
    adaptive = getattr(bot, "adaptive", None)
    if adaptive is not None:
        say(f"Opponent: {adaptive.describe()}.")
    if bot.network is None:
        others = [s for s in specs_for(bot.info.spec) if s != bot.info.spec]
        ship_note = (" Networks ship for " + ", ".join(f"'{s}'" for s in others)
                     + f": for example `descent play '{others[0]}'`." if others else "")
        how = ("evaluates positions by random playouts" if "eval=playout" in bot.spec else
               f"searches without one ({bot.spec.split(',seed=')[0]})")
        say(f"No trained network found for {bot.info.spec}: the computer {how} (train one with "
            f"`descent train '{bot.info.spec}'`)." + ship_note)
    else:
        say(f"The computer uses the network {bot.network}"
            + (" (shipped with descent; its model card is card.json beside it)." if is_shipped(bot.network) else "."))
    say(HELP.format(example=example))
    resigned = False
    redraw = True
    while not state.is_game_over():
        if redraw:
            say("")
            say(_colour(str(state), plain))
        redraw = True
        if state.to_move != seat:
            move = bot.reply()
            say(f"The computer ({it}) plays {move}.")
            continue
        text = _ask(f"Your move ({me}): ")
        if text is None:
            say("Input closed: the game is abandoned.")
            return -1
        cmd = text.strip().lower()
        redraw = False
        if not cmd:
            continue
        if cmd in ("help", "?"):
            say(HELP.format(example=example))
        elif cmd == "moves":
            say("Legal moves: " + ", ".join(state.move_to_str(a) for a in state.legal_actions_list()))
        elif cmd == "hint":
            say(f"Hint: the computer suggests {bot.hint()}.")
        elif cmd == "resign":
            resigned = True
            say(f"You resign. The computer ({it}) wins.")
            break
        elif cmd in ("quit", "exit"):
            resigned = True
            say(f"You leave the game; it counts as resigned. The computer ({it}) wins.")
            break
        elif cmd == "undo":
            # take back the person's last move and everything played after it
            stack = state.move_stack
            movers = []
            s = bot.info.new_state()
            for a in stack:
                movers.append(s.to_move)
                s.push(a)
            if seat not in movers:
                say("Nothing to undo: you have not moved yet.")
                continue
            last = len(movers) - 1 - movers[::-1].index(seat)
            bot.undo(len(stack) - last)
            say(f"Took back {len(stack) - last} move(s).")
            redraw = True
        else:
            try:
                action = state.parse_move(text.strip())
            except GameError as exc:
                say(f"That move is not possible: {exc}. Type 'moves' for the legal moves or 'help'.")
                continue
            played = state.move_to_str(action)    # in the position before the move, as typed
            bot.push(action)
            say(f"You ({me}) play {played}.")
            redraw = True
    say("")
    say(_colour(str(state), plain))
    if resigned:
        result = -1
        say(f"Result: {it} wins by resignation.")
    else:
        o = state.outcome()
        assert o is not None            # the loop above ends only at the game's end or a resignation
        if o.winner is None:
            result = 0
            say(f"Result: draw ({o.termination}).")
        else:
            result = 1 if o.winner == seat else -1
            say(f"Result: {'you win' if result > 0 else 'the computer wins'} ({o.termination}), "
                f"{o.result()}.")
    adaptive = getattr(bot, "adaptive", None)
    if adaptive is not None:
        try:
            change = bot.end_game(seat, resigned=resigned)
            assert change is not None           # an adaptive opponent returns its change
            say(f"Your profile is updated: next game {adaptive.describe()} (this game: "
                f"{change['before']['iterations']} iterations).")
        except OSError as exc:
            say(f"Could not save your profile: {exc}.")
    record = bot.record()
    say("Game record: " + " ".join(f"{i // 2 + 1}." + m if i % 2 == 0 else m for i, m in enumerate(record)))
    target = save
    if target is None and sys.stdin.isatty():
        target = (_ask("Save the record to a file (empty: no)? ") or "").strip() or None
    if target:
        final = state.result() if not resigned else ("0-1" if seat == 0 else "1-0")
        with open(target, "w") as f:
            f.write(f"[Game \"{bot.info.spec}\"]\n[You \"{me}\"]\n[Result \"{final}\"]\n"
                    + " ".join(record) + "\n")
        say(f"Record saved to {target}.")
    return result
