"""`orchestra serve` through a real server on 127.0.0.1 started by the test (a subprocess running the
CLI): in-process and served episodes agree for scripted agents on ToolScale and tau2 retail (same
seeds: same observations, rewards and info), and faults leave the server serving with no session
leaked: a client that disconnects mid-episode, 200 sessions at once against --max-sessions 64, a
malformed message, a step after the episode ended, a missing bearer token."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import websockets

import orchestra_gym  # noqa: F401  (registers the ids)
from orchestra_gym.agents import agent_factory
from orchestra_gym.serving.client import ServerError

ROOT = Path(__file__).resolve().parents[2]
TOOLSCALE, RETAIL = "ToolOrchestra-ToolScale-v0", "ToolOrchestra-Tau2-Retail-v0"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """`orchestra serve` in a subprocess; `url`, `sessions()` (the server's count), `get(path)`."""

    def __init__(self, env_id: str, *extra: str, token: "str | None" = None):
        self.port, self.token = _free_port(), token
        self.url = f"http://127.0.0.1:{self.port}"
        args = ["serve", "--env", env_id, "--port", str(self.port), *extra] + (["--token", token] if token else [])
        code = "import sys; from orchestra_jax.cli import main; sys.exit(main(sys.argv[1:]))"
        self.proc = subprocess.Popen([sys.executable, "-c", code, *args], cwd=ROOT, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        deadline = time.monotonic() + 60
        while True:
            try:
                self.get("/health")
                break
            except (urllib.error.URLError, ConnectionError):
                assert self.proc.poll() is None and time.monotonic() < deadline, self.proc.stdout.read()
                time.sleep(0.1)

    def get(self, path: str, token: "str | None" = None) -> dict:
        req = urllib.request.Request(self.url + path)
        if token or self.token:
            req.add_header("Authorization", f"Bearer {token or self.token}")
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())

    def sessions(self, settle_s: float = 10.0) -> int:
        """The active session count, waited on until it reaches 0 (closes are asynchronous) or `settle_s`."""
        deadline = time.monotonic() + settle_s
        while (n := self.get("/sessions")["active"]) and time.monotonic() < deadline:
            time.sleep(0.05)
        return n

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=20)


@pytest.fixture(scope="module")
def toolscale():
    s = Served(TOOLSCALE, "--max-sessions", "64")
    yield s
    s.stop()


def _same(a, b) -> None:
    """Equal observations / info, NumPy arrays equal in dtype, shape and values."""
    assert type(a) is type(b) or (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple))), (a, b)
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
    else:
        assert a == b


def _agree(url: str, env_id: str, agent: str, seeds: range, options: "dict | None" = None) -> list[float]:
    """Play `agent` in process; replay its actions on the served env with the same seeds; compare all."""
    rewards = []
    for seed in seeds:
        local, remote = gym.make(env_id), gym.make("orchestra_gym:Remote-v0", base_url=url)
        obs, info = local.reset(seed=seed, options=options)
        r_obs, r_info = remote.reset(seed=seed, options=options)
        _same((obs, info), (r_obs, r_info))
        policy = agent_factory(agent)(seed)
        policy.reset(local, obs, info)
        done, total = False, 0.0
        while not done:
            action = policy.act(obs, info)
            out, r_out = local.step(action), remote.step(action)
            _same(out, r_out)
            obs, reward, term, trunc, info = out
            total += reward
            done = term or trunc
        assert isinstance(info["reward_vector"], np.ndarray) and "cost_usd" in info and "preference" in info
        rewards.append(total)
        local.close()
        remote.close()
    return rewards


@pytest.mark.parametrize("agent", ["oracle", "expert-1", "random"])
def test_served_toolscale_episodes_equal_in_process(toolscale, agent):
    rewards = _agree(toolscale.url, TOOLSCALE, agent, range(3))
    assert len(rewards) == 3 and (agent != "oracle" or min(rewards) > 0)
    assert toolscale.sessions() == 0


def test_step_in_loop_serves_the_same_episodes():
    """--step-in loop (steps in the event loop, no per-session thread) changes nothing a client sees."""
    s = Served(TOOLSCALE, "--max-sessions", "4", "--step-in", "loop")
    try:
        rewards = _agree(s.url, TOOLSCALE, "oracle", range(2))
        assert len(rewards) == 2 and min(rewards) > 0 and s.sessions() == 0
    finally:
        s.stop()


def test_step_in_names_its_choices():
    from orchestra_gym.serving.server import build_app

    with pytest.raises(ValueError, match=r"step_in \(--step-in\) must be one of \['loop', 'thread'\]"):
        build_app(TOOLSCALE, step_in="inline")


def test_served_tau2_retail_episodes_equal_in_process():
    s = Served(RETAIL, "--max-sessions", "4")
    try:
        rewards = _agree(s.url, RETAIL, "oracle", range(2))
        assert len(rewards) == 2 and s.sessions() == 0
    finally:
        s.stop()


def test_structured_actions_and_openenv_routes(toolscale):
    env = gym.make("orchestra_gym:Remote-v0", base_url=toolscale.url)
    local = gym.make(TOOLSCALE)
    env.reset(seed=1)
    local.reset(seed=1)
    for action in ({"name": "call_expert", "arguments": {"expert": "expert-2"}}, {"message": "Hello"}):
        _same(env.step(action), local.step(action))
    state = env.unwrapped.state()
    assert state.env_id == TOOLSCALE and state.step_count == 2 and state.task_id
    env.close()
    schema = toolscale.get("/schema")
    assert {"text", "structured"} <= set(schema["action"]["properties"]) and "info" in schema["observation"]["properties"]
    assert toolscale.get("/health")["status"] == "healthy" and toolscale.sessions() == 0


async def _ws(url: str):
    return await websockets.connect(url.replace("http", "ws") + "/ws", max_size=1 << 26)


async def _call(ws, msg) -> dict:
    await ws.send(msg if isinstance(msg, str) else json.dumps(msg))
    return json.loads(await ws.recv())


def test_faults_keep_the_server_serving_with_no_session_leaked(toolscale):
    async def run() -> None:
        # a client that disconnects mid-episode
        ws = await _ws(toolscale.url)
        assert (await _call(ws, {"type": "reset", "data": {"seed": 2}}))["type"] == "observation"
        await _call(ws, {"type": "step", "data": {"text": "<message>hi</message>"}})
        ws.transport.abort() if hasattr(ws, "transport") else None
        await ws.close()
        # malformed messages: bad JSON, a field of the wrong type, both action fields, an unknown reset field
        ws = await _ws(toolscale.url)
        await _call(ws, {"type": "reset", "data": {"seed": 4}})
        bad_json = await _call(ws, "{not json")
        assert bad_json["type"] == "error" and "Invalid JSON" in bad_json["data"]["message"]
        wrong = await _call(ws, {"type": "step", "data": {"text": 5}})
        assert wrong["type"] == "error" and wrong["data"]["errors"][0]["loc"] == ["text"]
        both = await _call(ws, {"type": "step", "data": {"text": "a", "structured": {"message": "b"}}})
        assert both["type"] == "error" and "exactly one of 'text'" in json.dumps(both["data"])
        unknown = await _call(ws, {"type": "step", "data": {"txt": "a"}})
        assert unknown["type"] == "error" and unknown["data"]["errors"][0]["loc"] == ["txt"]
        reset_bad = await _call(ws, {"type": "reset", "data": {"seed": 4, "option": {}}})
        assert "unknown field(s) ['option']" in reset_bad["data"]["message"]
        # the session is still usable: it plays an episode to its end, then a step after the end
        r = await _call(ws, {"type": "reset", "data": {"seed": 4}})
        while not r["data"]["done"]:
            r = await _call(ws, {"type": "step", "data": {"structured": {"message": "All done."}}})
        after = await _call(ws, {"type": "step", "data": {"text": "<message>again</message>"}})
        assert after["type"] == "error" and "episode has ended" in after["data"]["message"]
        assert (await _call(ws, {"type": "reset", "data": {"seed": 4}}))["type"] == "observation"
        await ws.close()

    asyncio.run(run())
    assert toolscale.sessions() == 0


def test_200_sessions_at_once_against_max_sessions_64(toolscale):
    async def one(i: int):
        ws = await _ws(toolscale.url)
        try:
            await ws.send(json.dumps({"type": "reset", "data": {"seed": i}}))
        except websockets.ConnectionClosed:  # refused: the server sent its error frame, then closed
            pass
        return ws, json.loads(await ws.recv())

    async def run() -> tuple[int, int, int]:
        pairs = await asyncio.gather(*(one(i) for i in range(200)))
        ok = [ws for ws, r in pairs if r["type"] == "observation"]
        refused = [r for _, r in pairs if r["type"] == "error"]
        assert all(r["data"]["code"] == "CAPACITY_REACHED" and r["data"]["max_sessions"] == 64 for r in refused)
        active = toolscale.get("/sessions")["active"]
        await asyncio.gather(*(ws.close() for ws, _ in pairs))
        return len(ok), len(refused), active

    ok, refused, active = asyncio.run(run())
    assert ok == 64 and refused == 136 and active == 64
    assert toolscale.sessions() == 0
    _agree(toolscale.url, TOOLSCALE, "oracle", range(1))  # still serving


def test_bearer_token_and_a_bad_env_id():
    s = Served(TOOLSCALE, "--max-sessions", "2", token="s3cret")
    try:
        with pytest.raises(urllib.error.HTTPError) as e:
            s.get("/health", token="wrong")
        assert e.value.code == 401 and "bearer token" in json.loads(e.value.read())["detail"]
        with pytest.raises(Exception):
            gym.make("orchestra_gym:Remote-v0", base_url=s.url).reset(seed=0)
        env = gym.make("orchestra_gym:Remote-v0", base_url=s.url, token="s3cret")
        assert env.reset(seed=0)[1]["task_id"]
        env.close()
    finally:
        s.stop()
    out = subprocess.run([sys.executable, "-m", "orchestra_jax.cli", "serve", "--env", "ToolOrchestra-Nope-v0"],
                         cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert out.returncode == 2 and "ToolOrchestra-Nope" in out.stderr and "Traceback" not in out.stderr


def test_remote_env_plays_in_orchestra_eval(toolscale, tmp_path):
    from orchestra_gym.cli import main

    out = tmp_path / "s.json"
    assert main(["eval", "--env", "orchestra_gym:Remote-v0", "--env-kwargs", json.dumps({"base_url": toolscale.url}),
                 "--agent", "expert-1", "--episodes", "3", "--max-concurrency", "3", "--output-json", str(out),
                 "--no-progress"]) == 0
    served = json.loads(out.read_text())
    assert main(["eval", "--env", TOOLSCALE, "--agent", "expert-1", "--episodes", "3", "--output-json", str(out),
                 "--no-progress"]) == 0
    local = json.loads(out.read_text())
    for k in ("success_rate", "mean_cost_usd", "mean_turns"):
        assert served[k] == pytest.approx(local[k]), k
    assert toolscale.sessions() == 0


# ---- hostile clients (issue 48 items 1-6): every loop bounded in count and time, all on 127.0.0.1 ----

def _raw(port: int, data: bytes, wait_s: float = 5.0) -> bytes:
    """Send `data` on a fresh TCP connection and read until the server closes it or `wait_s` passes."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait_s) as s:
        s.sendall(data)
        out, deadline = b"", time.monotonic() + wait_s
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                return out
            out += chunk
        raise AssertionError(f"the server kept the connection open {wait_s} s; got {out[:200]!r}")


def _post(url: str, path: str, body: bytes) -> tuple[int, dict]:
    req = urllib.request.Request(url + path, data=body, method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_an_idle_session_is_closed_with_its_env_and_the_cap_holds():
    """Item 1: a session idle past --idle-timeout is told, closed (code 4408) and loses its env; the
    cap counts live envs, so 2 new sessions fit afterwards and a third is refused."""
    s = Served(TOOLSCALE, "--max-sessions", "2", "--idle-timeout", "1")

    async def run() -> None:
        old = [await _ws(s.url) for _ in range(2)]
        for ws in old:
            assert (await _call(ws, {"type": "reset", "data": {"seed": 0}}))["type"] == "observation"
        for ws in old:  # silent: told within a few seconds (OpenEnv's reaper never told the client)
            told = json.loads(await asyncio.wait_for(ws.recv(), 8))
            assert told["type"] == "error" and told["data"]["code"] == "SESSION_IDLE_TIMEOUT", told
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await asyncio.wait_for(_call(ws, {"type": "step", "data": {"text": "<message>hi</message>"}}), 8)
            assert closed.value.rcvd.code == 4408
        assert s.sessions() == 0
        new = [await _ws(s.url) for _ in range(3)]
        replies = [await _call(ws, {"type": "reset", "data": {"seed": 1}}) for ws in new[:2]]
        assert [r["type"] for r in replies] == ["observation", "observation"]
        refused = json.loads(await asyncio.wait_for(new[2].recv(), 8))
        assert refused["data"]["code"] == "CAPACITY_REACHED"
        assert s.get("/sessions") == {"active": 2, "max": 2}
        for ws in new:
            await ws.close()

    try:
        asyncio.run(run())
        assert s.sessions() == 0
    finally:
        s.stop()


@pytest.fixture(scope="module")
def guarded():
    s = Served(TOOLSCALE, "--max-sessions", "4", "--max-body-bytes", "65536", "--request-timeout", "1")
    yield s
    s.stop()


def test_bodies_and_messages_over_the_limit_are_refused_unread(guarded):
    """Item 2: a body declared over --max-body-bytes gets 413 before a byte of it is sent; a chunked body
    is cut at the limit; a WebSocket message over it closes the session with 1009."""
    head = f"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {300 << 20}\r\n\r\n"
    reply = _raw(guarded.port, head.encode())
    assert reply.startswith(b"HTTP/1.1 413") and b"--max-body-bytes" in reply
    chunked = (b"POST /reset HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
               + b"".join(b"%x\r\n%s\r\n" % (16384, b" " * 16384) for _ in range(5)))
    assert _raw(guarded.port, chunked).startswith(b"HTTP/1.1 413")

    async def big_message() -> int:
        ws = await _ws(guarded.url)
        await _call(ws, {"type": "reset", "data": {"seed": 0}})
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await _call(ws, {"type": "step", "data": {"text": "x" * 100_000}})
        return closed.value.rcvd.code

    assert asyncio.run(big_message()) == 1009
    assert guarded.sessions() == 0
    assert _post(guarded.url, "/reset", json.dumps({"seed": 3}).encode())[0] == 200  # still serving


def test_half_sent_requests_are_dropped(guarded):
    """Item 2: a client that sends part of its headers, or part of its body, and stalls is dropped
    after --request-timeout (1 s here); 20 such clients at once, all dropped within 5 s."""
    half_head = b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Le"
    half_body = b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"seed\": "
    socks = [socket.create_connection(("127.0.0.1", guarded.port), timeout=5) for _ in range(20)]
    try:
        for i, s in enumerate(socks):
            s.sendall(half_head if i % 2 else half_body)
        t0 = time.monotonic()
        for s in socks:
            s.recv(1024)  # b"" (or a 4xx) once the server drops it; socket.timeout (an error) if never
        assert time.monotonic() - t0 < 5
    finally:
        for s in socks:
            s.close()
    assert guarded.get("/health")["status"] == "healthy"


def test_client_errors_are_4xx_naming_the_field(toolscale):
    """Item 3: no 500 for a client's input: each bad /reset body a 422 naming its field; the sessionless
    POST /step a 409 pointing at WS /ws and Remote-v0."""
    cases = {b'{"seed": NaN}': "NaN", b'{"seed": 1.5}': "'seed'", b'{"seed": -1}': "'seed'",
             b'{"options": [1, 2]}': "'options'", b'{"options": {"pricing": "nope"}}': "unknown pricing schedule 'nope'",
             b'{"sed": 1}': "unknown field(s) ['sed']", b"[1]": "JSON object", b"{nope": "Invalid JSON",
             b'{"options": {"preference": {"outcome": 1e999}}}': "finite", b"\xff\xfe": "UTF-8"}
    for body, expect in cases.items():
        status, reply = _post(toolscale.url, "/reset", body)
        assert status == 422 and expect in reply["detail"], (body, status, reply)
    status, reply = _post(toolscale.url, "/step", json.dumps({"action": {"text": "<message>hi</message>"}}).encode())
    assert status == 409 and "WS /ws" in reply["detail"] and "Remote-v0" in reply["detail"]
    status, reply = _post(toolscale.url, "/reset", json.dumps({"seed": 5}).encode())
    assert status == 200 and reply["observation"]["info"]["task_id"]
    assert toolscale.get("/state")["env_id"] == TOOLSCALE and toolscale.sessions() == 0


def test_malformed_websocket_messages_get_an_error_frame_and_the_session_stays(toolscale):
    """Item 4: a JSON array, null, a string, a binary frame, 100k-deep nesting and a NaN preference
    weight each get an error frame; the same session then plays on."""
    async def run() -> None:
        ws = await _ws(toolscale.url)
        assert (await _call(ws, {"type": "reset", "data": {"seed": 0}}))["type"] == "observation"
        for bad in ("[1, 2]", "null", '"reset"', b"\x00\x01", "[" * 100_000 + "]" * 100_000,
                    '{"type": "reset", "data": {"seed": 0, "options": {"preference": {"outcome": NaN}}}}'):
            await ws.send(bad)
            reply = json.loads(await asyncio.wait_for(ws.recv(), 10))
            assert reply["type"] == "error", (bad[:40], reply)
        inf = await _call(ws, {"type": "reset", "data": {"seed": 0, "options": {"preference": {"cost": 1e999}}}})
        assert inf["type"] == "error" and "finite" in inf["data"]["message"]
        assert (await _call(ws, {"type": "reset", "data": {"seed": 0}}))["type"] == "observation"
        step = await _call(ws, {"type": "step", "data": {"text": "<message>hi</message>"}})
        assert step["type"] == "observation"
        await ws.close()

    asyncio.run(run())
    assert toolscale.sessions() == 0


def test_an_empty_token_is_refused_and_an_open_non_loopback_bind_warned():
    """Item 5: ORCHESTRA_SERVE_TOKEN="" stops `orchestra serve` (exit 2, before binding); no token on
    a non-loopback address is warned at start-up (`check_token`, the function `serve` prints from)."""
    from orchestra_gym.serving.server import check_token

    out = subprocess.run([sys.executable, "-m", "orchestra_jax.cli", "serve", "--env", TOOLSCALE, "--port",
                          str(_free_port())], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "ORCHESTRA_SERVE_TOKEN": ""})
    assert out.returncode == 2 and "empty" in out.stderr and "ORCHESTRA_SERVE_TOKEN" in out.stderr, out.stderr
    assert "WARNING" in check_token(None, "0.0.0.0") and "--token" in check_token(None, "10.1.2.3")
    assert "loopback" in check_token(None, "127.0.0.1") and check_token("s3cret", "0.0.0.0") is None
    with pytest.raises(ValueError, match="empty"):
        check_token("  ", "127.0.0.1")


def test_a_refused_reset_leaves_the_env_usable(toolscale):
    """Item 6: after a refused reset, reset + step work: in process (gym.make, passive checker on)
    and in a served session."""
    env = gym.make(TOOLSCALE)
    with pytest.raises(ValueError, match="pricing"):
        env.reset(seed=0, options={"pricing": "nope"})
    env.reset(seed=0)
    assert env.step("<message>hi</message>")[4]["turn"] == 1.0

    async def run() -> None:
        ws = await _ws(toolscale.url)
        refused = await _call(ws, {"type": "reset", "data": {"seed": 0, "options": {"pricing": "nope"}}})
        assert refused["type"] == "error" and "pricing" in refused["data"]["message"]
        assert (await _call(ws, {"type": "reset", "data": {"seed": 0}}))["type"] == "observation"
        step = await _call(ws, {"type": "step", "data": {"text": "<message>hi</message>"}})
        assert step["type"] == "observation", step
        await ws.close()

    asyncio.run(run())
