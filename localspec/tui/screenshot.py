"""Save an SVG screenshot of the app after one real turn (how assets/screenshot.svg for the README is made).

    python -m localspec.tui.screenshot --target T.gguf [--draft D.gguf] --prompt TEXT [--tool-choice NAME]
                                       [--origins] [--workspace DIR] [-o assets/screenshot.svg]

The app runs headless (Textual's test driver) on the given models; nothing is staged or edited afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from localspec.launch.flags import RunFlags
from localspec.tui.app import LocalspecApp
from localspec.tui.launch_options import AppOptions
from localspec.tui.widgets.prompt_input import PromptInput


async def _shoot(app: LocalspecApp, prompt: str, origins: bool, out: Path, size: tuple[int, int],
                 timeout: float) -> str:
    async with app.run_test(size=size) as pilot:
        end = time.monotonic() + timeout
        while app.chat.status != "ready":
            if time.monotonic() > end or app.chat.status == "no model":
                raise SystemExit(f"the model did not load ({app.chat.status})")
            await pilot.pause(0.1)
        box = app.chat.query_one("#prompt", PromptInput)
        box.focus()
        box.value = prompt
        app.simulate_key("enter")
        await pilot.pause(0.2)
        while app.chat.busy:
            if time.monotonic() > end:
                app.chat.cancel_turn()
            await pilot.pause(0.1)
        app.chat.origins = origins
        box.cursor_blink = False
        app.clear_notifications()
        await pilot.pause(0.3)
        return app.save_screenshot(filename=out.name, path=str(out.parent))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m localspec.tui.screenshot", description=__doc__.splitlines()[0])
    p.add_argument("--target", required=True)
    p.add_argument("--draft")
    p.add_argument("--prompt", required=True)
    p.add_argument("--tool-choice", default="auto")
    p.add_argument("--origins", action="store_true", help="colour tokens by origin in the screenshot")
    p.add_argument("--workspace", default=".")
    p.add_argument("--max-tokens", type=int, default=200)
    p.add_argument("--size", default="130x40", help="terminal COLUMNSxROWS")
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("-o", "--output", default="assets/screenshot.svg")
    a = p.parse_args(argv)
    cols, rows = (int(x) for x in a.size.lower().split("x"))
    out = Path(a.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    app = LocalspecApp(AppOptions(flags=RunFlags(target=a.target, draft=a.draft, max_tokens=a.max_tokens), workspace=Path(a.workspace).resolve(), tool_choice=a.tool_choice, record=False))
    print(asyncio.run(_shoot(app, a.prompt, a.origins, out, (cols, rows), a.timeout)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
