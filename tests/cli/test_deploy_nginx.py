"""docs/deploy.md's nginx configuration, run as the page shows it (only the addresses changed):
two hosts of ``mcp-trio serve --workers 2`` behind it, requests spread over both, one host
killed while the other goes on answering."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx2
import pytest

from tests._support.cli import CALL, HEADERS, PROGRAM, ROOT, Served, alive
from tools.debian import ensure_command

pytestmark = pytest.mark.interop

PAGE = ROOT / "docs" / "deploy.md"
NAME = "mcp.example.com"


def page_config() -> str:
    blocks = re.findall(r"^```nginx\n(.*?)^```", PAGE.read_text(), re.S | re.M)
    assert len(blocks) == 1, "docs/deploy.md shows one nginx configuration"
    return str(blocks[0])


def nginx_config(folder: Path, port: int, hosts: list[str]) -> Path:
    """The page's configuration with these addresses, in a main file of its own."""
    shown = page_config()
    upstreams = re.findall(r"server (10\.0\.0\.\d+:8000)", shown)
    assert len(upstreams) == len(hosts)
    for upstream, host in zip(upstreams, hosts, strict=True):
        shown = shown.replace(upstream, host)
    assert "listen 80;" in shown and f"server_name {NAME};" in shown
    shown = shown.replace("listen 80;", f"listen 127.0.0.1:{port};")
    main = f"""
daemon off;
worker_processes 1;
pid {folder}/nginx.pid;
error_log stderr warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {folder}/body;
    proxy_temp_path {folder}/proxy;
{shown}
}}
"""
    path = folder / "nginx.conf"
    path.write_text(main)
    return path


def children(pid: int) -> set[int]:
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(check: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def test_nginx_in_front_of_two_hosts_of_workers(tmp_path: Path) -> None:
    args = [PROGRAM, "--http", "127.0.0.1:0", "--workers", "2", "--stateless", "--allowed-host", NAME]
    hosts = [Served(args, tmp_path) for _ in range(2)]
    nginx = None
    try:
        addresses = [h.url.split("//")[1].split("/")[0] for h in hosts]
        workers = [children(h.proc.pid) for h in hosts]
        assert all(len(w) == 2 for w in workers)
        port = free_port()
        conf = nginx_config(tmp_path, port, addresses)
        binary = ensure_command("nginx", "nginx-light", "the deployment page's nginx test")
        nginx = subprocess.Popen([binary, "-p", str(tmp_path), "-c", str(conf), "-e", "stderr"])
        wait_until(lambda: listening(port) or nginx.poll() is not None, 20, "nginx listens")
        assert nginx.poll() is None
        url = f"http://127.0.0.1:{port}/mcp"
        one = httpx2.Limits(max_keepalive_connections=1, max_connections=1)
        with httpx2.Client(timeout=10, limits=one) as client:
            headers = {**HEADERS, "host": NAME}
            pids = set()
            for _ in range(20):  # one client connection: nginx spreads its requests
                r = client.post(url, headers=headers, json=CALL)
                assert r.status_code == 200, r.text
                pids.add(int(r.json()["result"]["content"][0]["text"]))
            assert pids & workers[0] and pids & workers[1] and pids <= workers[0] | workers[1]
            # host 0 dies (its supervisor killed: its workers stop on their own)
            hosts[0].proc.send_signal(signal.SIGKILL)
            wait_until(lambda: not any(alive(p) for p in workers[0]), 20, "host 0's workers stop")
            for _ in range(10):
                r = client.post(url, headers=headers, json=CALL)
                assert r.status_code == 200, r.text
                assert int(r.json()["result"]["content"][0]["text"]) in workers[1]
    finally:
        if nginx is not None:
            nginx.send_signal(signal.SIGQUIT)
            try:
                nginx.wait(10)
            except subprocess.TimeoutExpired:
                nginx.kill()
                nginx.wait()
        for h in hosts:
            h.close()
