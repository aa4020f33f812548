#!/usr/bin/env python3
"""A TCP proxy whose connection can be cut: forwards 127.0.0.1:LISTEN to 127.0.0.1:TARGET while the
control file says "ok"; when it says "cut", every open connection is closed and new ones are
refused until it says "ok" again (a worker's network cut, for experiments/studies_chaos.sh).

usage: experiments/tcp_cut_proxy.py LISTEN TARGET CONTROL_FILE
"""
import asyncio
import os
import sys


def state(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return "ok"


async def main(listen, target, control):
    open_writers = set()

    async def pipe(reader, writer):
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def handle(client_reader, client_writer):
        if state(control) == "cut":
            client_writer.close()
            return
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target)
        except OSError:
            client_writer.close()
            return
        open_writers.update({client_writer, server_writer})
        await asyncio.gather(pipe(client_reader, server_writer), pipe(server_reader, client_writer))
        open_writers.difference_update({client_writer, server_writer})

    async def watch():
        while True:
            if state(control) == "cut":
                for w in list(open_writers):
                    w.transport.abort()
                open_writers.clear()
            await asyncio.sleep(0.05)

    server = await asyncio.start_server(handle, "127.0.0.1", listen)
    asyncio.create_task(watch())
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]))
