"""An MCP server made with the official Python SDK's FastMCP, for stepwise's tests.

Usage: python fastmcp_server.py stdio
       python fastmcp_server.py http PORT_FILE [json] [PORT]
         streamable HTTP on PORT (else a free one), written to PORT_FILE; with `json` it answers requests
         with JSON bodies rather than event streams
"""
import os
import socket
import sys

import anyio

from mcp import types
from mcp.server.fastmcp import Context, FastMCP
from mcp.shared.exceptions import McpError
from mcp.shared.message import ServerMessageMetadata

mcp = FastMCP("stepwise-test", log_level="WARNING", json_response="json" in sys.argv[3:])


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
    """Kills the server mid-call, saying so on stderr first."""
    print("crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@mcp.tool()
async def ask_client(ctx: Context) -> str:
    """Asks the client mid-call: a ping, then a log notification, then a request it does not offer (roots)."""
    related = ServerMessageMetadata(related_request_id=ctx.request_context.request_id)
    await ctx.session.send_request(types.ServerRequest(types.PingRequest()), types.EmptyResult, metadata=related)
    await ctx.info("between the requests")
    try:
        await ctx.session.send_request(
            types.ServerRequest(types.ListRootsRequest()), types.ListRootsResult, metadata=related
        )
        roots = "answered"
    except McpError as e:
        roots = f"refused with {e.error.code}"
    return f"ping answered; roots {roots}"


@mcp.tool()
def sessions() -> str:
    """How many HTTP sessions are open (a session the client deleted is not)."""
    # The SDK keeps ended sessions in its table, marked terminated (mcp 1.27, pinned in setup.sh).
    live = [t for t in mcp.session_manager._server_instances.values() if not t.is_terminated]
    return str(len(live))


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

        # Listening before the port is written: the test connects as soon as it reads the file. A port
        # given is one a server before this one had (a restarted server): its connections may linger.
        port = int(sys.argv[-1]) if sys.argv[-1].isdigit() else 0
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen(64)
        with open(sys.argv[2] + ".tmp", "w") as f:
            f.write(str(sock.getsockname()[1]))
        os.rename(sys.argv[2] + ".tmp", sys.argv[2])
        server = uvicorn.Server(uvicorn.Config(mcp.streamable_http_app(), log_level="warning"))
        server.run(sockets=[sock])
