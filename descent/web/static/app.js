// descent serve: the page. Talks to the JSON API of descent/web/app.py; draws the board the server
// describes (cells with coordinates, names and pieces) and turns clicks into moves in the game's
// notation: one click for a move naming one square, two (from, to) for a move naming several. A game
// that is not built in comes on a generic grid (descent/web/grid.py): a move may also carry an area (a
// click anywhere in it plays the move: a column), and where no click gives a move, the moves are listed.
"use strict";

const SVGNS = "http://www.w3.org/2000/svg";
const CHESS = { K: "\u265A", Q: "\u265B", R: "\u265C", B: "\u265D", N: "\u265E", P: "\u265F" };
const PLAIN = ["tic_tac_toe", "reversi", "outer_open_gomoku", "connect6", "xiangqi"];
const $ = (id) => document.getElementById(id);

let offered = [];       // the games of /api/games
let levels = [];        // the levels of /api/levels
let state = null;       // the view of the game being played
let selected = null;    // the square picked as the from-square of a move
let hint = null;        // the last hint
let busy = false;       // a request is running
let heartbeat = 60;     // seconds between questions about the open game (/api/games says)
const ELO = "elo";      // the level select's entry for a rating the person names (game.elo)
const LIST_AT = 16;     // more moves than this that no click gives: a list to pick from, not buttons

async function api(method, path, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  let data = null;
  try { data = await response.json(); } catch (e) { data = null; }
  if (!response.ok) {
    throw new Error((data && data.error) || `the server answered ${response.status}`);
  }
  return data;
}

function showError(text) {
  const e = $("error");
  e.textContent = text || "";
  e.hidden = !text;
}

function setStatus(text) { $("status").textContent = text; }

function svg(tag, attrs, parent) {
  const el = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  if (parent) parent.appendChild(el);
  return el;
}

// ---- setup ----------------------------------------------------------------------------------

function signed(x) { return (x >= 0 ? "+" : "\u2212") + Math.abs(Math.round(x)); }

function ratingText(r, interval = true) {
  // a level's rating on its game's Elo scale (descent.strength), when one is known; else nothing.
  // A level that won every ladder game has only a lower bound: "at least", no interval.
  if (!r || typeof r.elo !== "number") return "";
  if (r.at_least) return ` (Elo at least ${signed(r.elo)})`;
  let t = ` (Elo ${signed(r.elo)}`;
  if (interval && typeof r.low === "number" && typeof r.high === "number") t += ` [${signed(r.low)}, ${signed(r.high)}]`;
  return t + ")";
}

function levelRating(spec, level) {
  const game = offered.find((g) => g.spec === spec);
  return game ? (game.levels.find((x) => x.name === level) || {}).rating : null;
}

function fillLevels() {
  const sel = $("level");
  const keep = sel.value || "balanced";
  sel.textContent = "";
  for (const lv of levels) {
    const r = levelRating($("game").value, lv.name);
    const opt = document.createElement("option");
    opt.value = lv.name;
    opt.textContent = lv.name + ratingText(r);
    sel.appendChild(opt);
  }
  const game = offered.find((g) => g.spec === $("game").value);
  if (game && game.elo) {
    const opt = document.createElement("option");
    opt.value = ELO;
    opt.textContent = `an Elo you name (${signed(game.elo.low)} to ${signed(game.elo.high)})`;
    sel.appendChild(opt);
    const input = $("elo");
    input.min = String(Math.ceil(game.elo.low));
    input.max = String(Math.floor(game.elo.high));
    if (input.value === "") input.value = String(Math.round((game.elo.low + game.elo.high) / 2));
  }
  sel.value = [...sel.options].some((o) => o.value === keep) ? keep : "balanced";
  levelChanged();
}

function levelChanged() {
  $("elo-label").hidden = $("level").value !== ELO;
  if ($("level").value === ELO) {
    const game = offered.find((g) => g.spec === $("game").value);
    $("level-about").textContent = "The computer plays the rated setting nearest to the Elo you name, "
      + `against ${game.elo.anchor}.`;
    $("player-label").hidden = true;
    return;
  }
  const lv = levels.find((x) => x.name === $("level").value);
  const r = levelRating($("game").value, $("level").value);
  let about = lv ? `${lv.name}: ${lv.about}.` : "";
  if (r && typeof r.elo === "number" && r.at_least) {
    about += ` ${lv.name === "adaptive" ? "Starts at" : "Rated"} Elo at least ${signed(r.elo)} against `
      + `${r.anchor || "the game's ladder"}: it won every ladder game, so only a lower bound is known.`;
    if (r.note) about += ` ${r.note.charAt(0).toUpperCase()}${r.note.slice(1)}.`;
  } else if (r && typeof r.elo === "number") {
    about += ` ${lv.name === "adaptive" ? "Starts at" : "Rated"} Elo ${signed(r.elo)}, 95% interval `
      + `[${signed(r.low)}, ${signed(r.high)}], against ${r.anchor || "the game's ladder"}.`;
    if (r.note) about += ` ${r.note.charAt(0).toUpperCase()}${r.note.slice(1)}.`;
  }
  $("level-about").textContent = about;
  $("player-label").hidden = $("level").value !== "adaptive";
}

async function init() {
  try {
    const [g, l] = await Promise.all([api("GET", "/api/games"), api("GET", "/api/levels")]);
    offered = g.games;
    levels = l.levels;
    heartbeat = g.heartbeat || heartbeat;
  } catch (e) {
    showError(`Cannot reach the server: ${e.message}`);
    return;
  }
  const sel = $("game");
  for (const game of offered) {
    const opt = document.createElement("option");
    opt.value = game.spec;
    const note = game.network === "trained" ? " (your network)" : game.network ? "" : " (no network: playouts)";
    opt.textContent = `${game.spec}${note}`;
    sel.appendChild(opt);
  }
  if (!offered.length) showError("No game has a network here: train one with `descent train`, or name one "
                                 + "with `descent serve --game SPEC`.");
  const named = offered.find((g) => g.named);
  if (named) sel.value = named.spec;
  else if (offered.some((g) => g.spec === "reversi(size=6)")) sel.value = "reversi(size=6)";
  sel.addEventListener("change", fillLevels);
  $("level").addEventListener("change", levelChanged);
  $("setup").addEventListener("submit", (ev) => { ev.preventDefault(); newGame(); });
  $("typed").addEventListener("submit", (ev) => { ev.preventDefault(); typedMove(); });
  $("hint").addEventListener("click", askHint);
  $("undo").addEventListener("click", undo);
  $("resign").addEventListener("click", resign);
  // a computer move that failed (the error is shown) is asked for again from here
  $("computer-move").addEventListener("click", () => run(computerTurns));
  $("show-legal").addEventListener("change", render);
  fillLevels();
  // the game in the address (a reload, a link): back to it, in the browser that started it
  const gid = new URLSearchParams(window.location.search).get("game");
  if (gid) await resume(gid);
  else await offerMine();
  setInterval(keepAlive, heartbeat * 1000);
  document.body.dataset.ready = "1";
}

async function offerMine() {
  // the start page (a bookmark, a typed address): the person's games in progress, to go back to
  let mine = [];
  try { mine = (await api("GET", "/api/mine")).games || []; } catch (e) { mine = []; }
  const box = $("mine");
  box.textContent = "";
  box.hidden = !mine.length;
  if (!mine.length) return;
  box.append(mine.length === 1 ? "You have a game in progress: " : "Your games in progress: ");
  mine.forEach((g, i) => {
    if (i) box.append(", ");
    const a = document.createElement("a");
    a.href = `/?game=${encodeURIComponent(g.id)}`;
    a.className = "mine";
    a.textContent = `${g.game}, ${g.level}, ${g.plies} ${g.plies === 1 ? "move" : "moves"} played`;
    box.appendChild(a);
  });
  box.append(mine.length === 1 ? " (go back to it, or start a new game)." : ".");
}

function showGameInAddress() {
  const url = state ? `/?game=${encodeURIComponent(state.id)}` : "/";
  if (window.location.pathname + window.location.search !== url) window.history.replaceState(null, "", url);
}

async function resume(gid) {
  try {
    state = await api("GET", `/api/game/${encodeURIComponent(gid)}`);
  } catch (e) {
    state = null;
    showGameInAddress();
    showError(`${e.message}.`);
    render();
    return;
  }
  if (offered.some((g) => g.spec === state.game)) {
    $("game").value = state.game;
    fillLevels();
  }
  $("side").value = state.you === 0 ? "first" : "second";
  render();
  run(async () => {
    await waitForThinking();
    await computerTurns();
  });
}

function sleep(ms) { return new Promise((resolve) => setTimeout(resolve, ms)); }

async function waitForThinking() {
  // the computer was thinking when the page was (re)loaded: its move comes with the board
  while (state && state.thinking) {
    setStatus(`The computer (${state.sides[1 - state.you]}) is thinking...`);
    await sleep(500);
    state = await api("GET", `/api/game/${state.id}`);
  }
}

async function keepAlive() {
  // a game is closed after the server's idle time without a request: an open page keeps it
  if (!state || busy) return;
  try {
    const now = await api("GET", `/api/game/${state.id}`);
    if (!busy && state && now.id === state.id) { state = now; render(); }
  } catch (e) {
    if (!busy) showError(`${e.message}.`);
  }
}

// ---- actions --------------------------------------------------------------------------------

async function run(action) {
  // one request at a time from this page; errors are shown, the board is redrawn
  if (busy) return;
  busy = true;
  showError("");
  render();
  try {
    await action();
  } catch (e) {
    if (state) showError(e.message);
    else setStatus(e.message);      // no game on the page: the reason replaces the status
  } finally {
    busy = false;
    render();
  }
}

async function computerTurns() {
  while (state && !state.over && !state.your_turn) {
    setStatus(`The computer (${state.sides[1 - state.you]}) is thinking...`);
    state = await api("POST", `/api/game/${state.id}/reply`);
    render();
  }
}

function newGame() {
  run(async () => {
    const old = state;
    const body = { game: $("game").value, level: $("level").value, side: $("side").value };
    if (body.level === "adaptive") body.player = $("player").value.trim();
    if (body.level === ELO) {
      delete body.level;
      body.elo = Number($("elo").value);
    }
    // the page's old game is closed by the server once the new one stands, its table serving the
    // new one; a refused new game leaves it as it was
    if (old && !old.over) body.replace = old.id;
    else if (old) api("DELETE", `/api/game/${old.id}`).catch(() => {});
    setStatus("Starting a new game...");
    try {
      state = await api("POST", "/api/new", body);
    } catch (e) {
      if (!old || !old.over) throw new Error(`New game refused: ${e.message}`);
      state = null;         // the finished game was closed: the page is empty, the reason in the status
      showGameInAddress();
      render();
      setStatus(`New game refused: ${e.message}`);
      return;
    }
    $("mine").hidden = true;
    selected = null;
    hint = null;
    showGameInAddress();
    render();
    await computerTurns();
  });
}

function play(text) {
  run(async () => {
    selected = null;
    hint = null;
    $("choices").hidden = true;
    state = await api("POST", `/api/game/${state.id}/move`, { move: text });
    render();
    await computerTurns();
  });
}

function typedMove() {
  const text = $("move-input").value.trim();
  if (!state || !text) return;
  $("move-input").value = "";
  play(text);
}

function askHint() {
  run(async () => {
    setStatus("Looking for a good move...");
    const answer = await api("POST", `/api/game/${state.id}/hint`);
    state = answer;
    hint = answer.hint;
  });
}

function undo() {
  run(async () => {
    selected = null;
    hint = null;
    state = await api("POST", `/api/game/${state.id}/undo`);
  });
}

function resign() {
  run(async () => {
    selected = null;
    state = await api("POST", `/api/game/${state.id}/resign`);
  });
}

function choose(candidates) {
  // several legal moves share the clicked squares (a promotion, a capture path): ask which
  const box = $("choices");
  box.textContent = "Which move? ";
  for (const m of candidates) {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = m.text;
    b.dataset.move = m.text;
    b.addEventListener("click", () => play(m.text));
    box.appendChild(b);
  }
  box.hidden = false;
}

function clicked(name) {
  if (!state || busy || state.over || !state.your_turn) return;
  showError("");
  $("choices").hidden = true;
  const moves = state.moves;
  const from = moves.filter((m) => m.squares.length >= 2 && m.squares[0] === name);
  const place = moves.filter((m) => m.squares.length === 1 && m.squares[0] === name);
  if (selected) {
    const ends = moves.filter((m) => m.squares.length >= 2 && m.squares[0] === selected
                                     && m.squares[m.squares.length - 1] === name);
    if (ends.length === 1) return play(ends[0].text);
    if (ends.length > 1) return choose(ends);
    if (name === selected) { selected = null; render(); return; }
    if (from.length) { selected = name; render(); return; }
    showError(`No legal move from ${selected} to ${name}.`);
    selected = null;
    render();
    return;
  }
  if (from.length) { selected = name; render(); return; }
  if (place.length === 1) return play(place[0].text);
  if (place.length > 1) return choose(place);
  const area = moves.filter((m) => m.area && m.area.includes(name));
  if (area.length === 1) return play(area[0].text);
  if (area.length > 1) return choose(area);
  showError(`${name}: not a legal move here.`);
}

// ---- drawing --------------------------------------------------------------------------------

function glyph(piece, game, cell) {
  if (!piece) return "";
  if (cell && cell.glyph) return cell.glyph;
  if (game === "chess") return CHESS[piece.toUpperCase()] || piece;
  if (game === "xiangqi") return piece.toUpperCase();
  if (game === "international_draughts") return piece === piece.toUpperCase() ? "K" : "";
  return "";
}

function drawBoard() {
  const g = $("board");
  g.textContent = "";
  if (!state) { g.setAttribute("viewBox", "0 0 1 1"); g.setAttribute("width", 0); return; }
  const b = state.board;
  const game = state.name;
  const pad = 0.6;
  const width = b.width + 2 * pad, height = b.height + 2 * pad;
  g.setAttribute("viewBox", `${-pad} ${-pad} ${width} ${height}`);
  const unit = Math.max(28, Math.min(64, 560 / Math.max(b.width, b.height)));
  g.setAttribute("width", Math.round(width * unit));
  g.setAttribute("height", Math.round(height * unit));
  // the person's side at the bottom: turned half round when they play second
  let cells = b.cells;
  if (state.you === 1) {
    const xs = cells.map((c) => c.x), ys = cells.map((c) => c.y);
    const sx = Math.min(...xs) + Math.max(...xs), sy = Math.min(...ys) + Math.max(...ys);
    cells = cells.map((c) => Object.assign({}, c, { x: sx - c.x, y: sy - c.y }));
  }
  g.dataset.turned = state.you === 1 ? "1" : "0";
  const byName = {};
  const centre = (c) => [c.x + 0.5, c.y + 0.5];
  for (const c of cells) if (c.name) byName[c.name] = c;
  const lastSquares = new Set(state.last ? state.last.squares : []);
  const hintSquares = new Set(hint ? hint.squares : []);
  const showLegal = $("show-legal").checked && state.your_turn && !busy;
  const moves = state.moves || [];
  const targets = new Set(), movable = new Set();
  if (showLegal) {
    for (const m of moves) {
      const s = m.squares;
      if (selected) {
        if (s.length >= 2 && s[0] === selected) targets.add(s[s.length - 1]);
      } else if (s.length === 1) targets.add(s[0]);
      else if (s.length >= 2) movable.add(s[0]);
    }
  }
  const hex = (cx, cy, r) => {
    const pts = [];
    for (let k = 0; k < 6; k++) {
      const a = Math.PI / 180 * (60 * k + 30);
      pts.push(`${(cx + r * Math.cos(a)).toFixed(3)},${(cy + r * Math.sin(a)).toFixed(3)}`);
    }
    return pts.join(" ");
  };
  const R = 1 / Math.sqrt(3);
  // ground
  for (const c of cells) {
    const [cx, cy] = centre(c);
    if (b.shape === "square") {
      let cls = "sq";
      if (game === "international_draughts") cls += c.dark ? " dark" : " light";
      else if (PLAIN.includes(game) || b.generic) cls += " plain";
      else if ((c.x + c.y) % 2 === 1) cls += " alt";
      svg("rect", { x: c.x, y: c.y, width: 1, height: 1, class: cls }, g);
    } else if (b.shape === "hex") {
      svg("polygon", { points: hex(cx, cy, R), class: "hex" }, g);
    }
  }
  // havannah's cells carry their names (the board has no edge to write coordinates on)
  if (b.shape === "hex") {
    for (const c of cells) {
      if (c.name && !c.piece) svg("text", { x: centre(c)[0], y: centre(c)[1], class: "coord" }, g).textContent = c.name;
    }
  }
  if (b.river) svg("rect", { x: 0, y: b.height / 2 - 0.04, width: b.width, height: 0.08, class: "line" }, g);
  for (const [a, z] of b.lines || []) {
    const p = byName[a], q = byName[z];
    if (!p || !q) continue;
    const [x1, y1] = centre(p), [x2, y2] = centre(q);
    svg("line", { x1, y1, x2, y2, class: "line" }, g);
  }
  // labels: columns under the board, rows on the left (square boards named letter + number)
  if (b.shape === "square" && game !== "international_draughts") {
    for (const c of cells) {
      if (!c.name) continue;
      const m = /^([a-z])(\d+)$/.exec(c.name);
      if (!m) continue;
      if (c.y === b.height - 1) svg("text", { x: c.x + 0.5, y: b.height + 0.3, class: "label" }, g).textContent = m[1];
      if (c.x === 0) svg("text", { x: -0.3, y: c.y + 0.5, class: "label" }, g).textContent = m[2];
    }
  }
  // marks, pieces
  for (const c of cells) {
    const [cx, cy] = centre(c);
    if (b.shape === "points") svg("circle", { cx, cy, r: 0.08, class: "point" }, g);
    if (c.name && lastSquares.has(c.name)) {
      if (b.shape === "hex") svg("polygon", { points: hex(cx, cy, R), class: "last" }, g);
      else if (b.shape === "square") svg("rect", { x: c.x, y: c.y, width: 1, height: 1, class: "last" }, g);
      else svg("circle", { cx, cy, r: 0.45, class: "last" }, g);
    }
    if (c.piece) {
      svg("circle", { cx, cy, r: 0.38, class: `piece p${c.owner === null ? "n" : c.owner}` }, g);
      const t = glyph(c.piece, game, c);
      if (t) svg("text", { x: cx, y: cy + 0.02, class: `glyph p${c.owner === null ? "n" : c.owner}` }, g).textContent = t;
    }
    if (c.name && hintSquares.has(c.name)) svg("circle", { cx, cy, r: 0.44, class: "hinted" }, g);
    if (c.name && c.name === selected) svg("circle", { cx, cy, r: 0.44, class: "selected" }, g);
    if (c.name && movable.has(c.name)) svg("circle", { cx, cy, r: 0.44, class: "movable" }, g);
    if (c.name && targets.has(c.name)) svg("circle", { cx, cy, r: 0.14, class: "target" }, g);
  }
  // click targets on top, one per named cell
  for (const c of cells) {
    if (!c.name) continue;
    const [cx, cy] = centre(c);
    let hit;
    if (b.shape === "square") hit = svg("rect", { x: c.x, y: c.y, width: 1, height: 1 }, g);
    else if (b.shape === "hex") hit = svg("polygon", { points: hex(cx, cy, R) }, g);
    else hit = svg("circle", { cx, cy, r: 0.45 }, g);
    hit.setAttribute("class", "cell hit");
    hit.dataset.square = c.name;
    if (c.piece) hit.dataset.piece = c.piece;
    svg("title", {}, hit).textContent = c.name + (c.piece ? ` (${c.piece})` : "");
    hit.addEventListener("click", () => clicked(c.name));
  }
}

function render() {
  drawBoard();
  const on = !!state && !busy;
  const playing = on && !state.over;
  $("hint").disabled = !(playing && state.your_turn);
  $("undo").disabled = !(playing && state.record.length > 0);
  $("resign").disabled = !playing;
  $("move-submit").disabled = !(playing && state.your_turn);
  $("computer-move").hidden = !(playing && !state.your_turn);
  const dl = $("download");
  if (state) {
    dl.href = `/api/game/${state.id}/record`;
    dl.classList.remove("disabled");
    dl.setAttribute("aria-disabled", "false");
  }
  const specials = $("specials");
  specials.textContent = "";
  if (playing && state.your_turn) {
    // the moves no click gives (a pass; every move where the geometry is unknown): buttons, or a list
    const unclicked = state.moves.filter((x) => x.squares.length === 0 && !(x.area && x.area.length));
    if (unclicked.length > LIST_AT) {
      const sel = document.createElement("select");
      sel.id = "move-list";
      sel.setAttribute("aria-label", "legal moves");
      for (const m of unclicked) {
        const opt = document.createElement("option");
        opt.value = m.text;
        opt.textContent = m.text;
        sel.appendChild(opt);
      }
      const b = document.createElement("button");
      b.type = "button";
      b.id = "play-listed";
      b.textContent = "Play this move";
      b.addEventListener("click", () => play(sel.value));
      specials.append(sel, b);
    } else {
      for (const m of unclicked) {
        const b = document.createElement("button");
        b.type = "button";
        b.textContent = m.text;
        b.dataset.move = m.text;
        b.className = "special";
        b.addEventListener("click", () => play(m.text));
        specials.appendChild(b);
      }
    }
  }
  document.body.dataset.busy = busy ? "1" : "0";
  if (!state) return;
  const me = state.sides[state.you], it = state.sides[1 - state.you];
  $("opponent").textContent = `${state.game}: ${state.opponent}` + (state.profile ? `. ${state.profile}` : "");
  $("opponent-about").textContent = (state.about || []).join(" ");
  $("opponent-more").hidden = !(state.about && state.about.length);
  const count = $("count");
  count.hidden = !state.count;
  if (state.count) count.textContent = `Discs: ${state.sides[0]} ${state.count[0]}, ${state.sides[1]} ${state.count[1]}.`;
  if (!busy) {
    if (state.over) setStatus("The game is over.");
    else if (state.your_turn) setStatus(`Your move (${me})` + (hint ? `: the hint is ${hint.text}` : "")
                                        + (selected ? `: ${selected} selected` : "") + ".");
    else setStatus(`The computer (${it}) is to move.`);
  }
  const res = $("result");
  res.hidden = !state.result;
  res.textContent = state.result ? state.result.text : "";
  $("legal").textContent = state.moves.map((m) => m.text).join(" ");
  const rec = $("record");
  rec.textContent = "";
  for (const m of state.record) {
    const li = document.createElement("li");
    li.textContent = m;
    rec.appendChild(li);
  }
  $("drawing").textContent = state.drawing;
  // a generic board whose drawing could not be read shows no pieces: the game's own drawing then
  if (state.board.generic && !state.board.drawn) $("drawing-box").open = true;
  document.body.dataset.game = state.id;
  document.body.dataset.plies = String(state.record.length);
  document.body.dataset.turn = state.over ? "over" : state.your_turn ? "you" : "computer";
}

window.addEventListener("DOMContentLoaded", init);
