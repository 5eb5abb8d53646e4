"""An MCP server made with the official Python SDK's FastMCP, for stepwise's tests.

Usage: python fastmcp_server.py stdio
       python fastmcp_server.py http PORT_FILE   (streamable HTTP on a free port, written to PORT_FILE)
"""
import os
import socket
import sys

import anyio

from mcp.server.fastmcp import FastMCP

mcp = FastMCP("stepwise-test", log_level="WARNING")


@mcp.tool()
def add(a: int, b: int) -> str:
    """Add two integers."""
    return f"sum={a + b}"


@mcp.tool()
def fail(reason: str) -> str:
    """Always fails with the reason given."""
    raise ValueError(f"failed on purpose: {reason}")


@mcp.tool()
async def hang() -> str:
    """Never answers (the server stays responsive to other calls)."""
    await anyio.sleep(3600)
    return "late"


@mcp.tool()
def crash() -> str:
    """Kills the server mid-call."""
    os._exit(3)


@mcp.tool()
def write(path: str, text: str) -> str:
    """Writes text to a file (a tool that changes the disk, for plan mode's tests)."""
    with open(path, "w") as f:
        f.write(text)
    return f"wrote {path}"


@mcp.tool()
def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        mcp.run("stdio")
    else:
        import uvicorn

        # Listening before the port is written: the test connects as soon as it reads the file.
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        with open(sys.argv[2] + ".tmp", "w") as f:
            f.write(str(sock.getsockname()[1]))
        os.rename(sys.argv[2] + ".tmp", sys.argv[2])
        server = uvicorn.Server(uvicorn.Config(mcp.streamable_http_app(), log_level="warning"))
        server.run(sockets=[sock])
