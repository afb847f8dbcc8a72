"""A client of Capstan's /mcp written with the protocol's Python SDK (PyPI
`mcp`), run by tests/tests/e2e/http/mcp.rs. It connects as each key it is
given, does what the test names, and prints one JSON object saying what
it saw, so the Rust test asserts on a client nobody here wrote.

Usage: client.py URL MODE KEY STEP [ARGS_JSON]
  MODE  legacy (initialize handshake) or auto (server/discover first)
  STEP  list | call | cancel | resources (list and read each, and
        ARGS' "missing" uri) | watch (list, print a line, wait for
        notifications/tools/list_changed — in auto mode on a
        subscriptions/listen stream — and list again)
"""

import asyncio
import json
import sys

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError


def result_of(result):
    text = "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")
    return {
        "isError": bool(result.is_error),
        "structured": result.structured_content,
        "text": text,
        "meta": result.meta or {},
    }


async def main():
    url, mode, key, step = sys.argv[1:5]
    args = json.loads(sys.argv[5]) if len(sys.argv) > 5 else {}
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
    said = {}
    changed = asyncio.Event()

    async def on_message(message):
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            changed.set()

    transport = streamable_http_client(url, http_client=http)
    async with Client(transport, mode=mode, message_handler=on_message) as client:
        said["protocol"] = client.protocol_version
        said["server"] = client.server_info.name if client.server_info else None
        if step == "list":
            listed = await client.list_tools()
            said["tools"] = [
                {
                    "name": tool.name,
                    "title": tool.title,
                    "inputType": tool.input_schema.get("type"),
                    "hasOutputSchema": tool.output_schema is not None,
                    "annotations": (
                        tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else {}
                    ),
                }
                for tool in listed.tools
            ]
        elif step == "call":
            try:
                called = await client.call_tool(args["name"], args.get("arguments", {}), meta=args.get("meta"))
                said["result"] = result_of(called)
            except MCPError as e:
                said["error"] = {"code": e.error.code, "message": e.error.message}
        elif step == "resources":
            listed = await client.list_resources()
            said["resources"] = {}
            for resource in listed.resources:
                read = await client.read_resource(str(resource.uri))
                said["resources"][str(resource.uri)] = json.loads(read.contents[0].text)
            try:
                await client.read_resource(args["missing"])
                said["missing"] = None
            except MCPError as e:
                said["missing"] = {"code": e.error.code, "message": e.error.message}
        elif step == "watch" and mode == "auto":
            # The current revision: a subscriptions/listen stream.
            listed = await client.list_tools()
            async with client.listen(tools_list_changed=True) as subscription:
                print(json.dumps({"listed": [tool.name for tool in listed.tools]}), flush=True)

                async def first_event():
                    async for event in subscription:
                        return event

                try:
                    await asyncio.wait_for(first_event(), timeout=60)
                    said["changed"] = True
                except asyncio.TimeoutError:
                    said["changed"] = False
            said["tools"] = [tool.name for tool in (await client.list_tools()).tools]
        elif step == "watch":
            listed = await client.list_tools()
            print(json.dumps({"listed": [tool.name for tool in listed.tools]}), flush=True)
            try:
                await asyncio.wait_for(changed.wait(), timeout=60)
                said["changed"] = True
            except asyncio.TimeoutError:
                said["changed"] = False
            said["tools"] = [tool.name for tool in (await client.list_tools()).tools]
        elif step == "cancel":
            # Gives up after a second: the SDK sends notifications/cancelled.
            try:
                await client.call_tool(args["name"], args.get("arguments", {}), read_timeout_seconds=1.0)
                said["cancelled"] = False
            except Exception as e:  # the SDK's timeout, whatever its class
                said["cancelled"] = True
                said["raised"] = type(e).__name__
    print(json.dumps(said))


asyncio.run(main())
