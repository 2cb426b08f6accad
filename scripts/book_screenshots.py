"""Screenshots of four pages of the built book (make book first) at 1400 and 390 px, with Playwright and Debian's
Chromium, into docs/screenshots/ as PNG under ~400 KB each (long pages are cut at 4500 or 6000 px).

    .venv/bin/python scripts/book_screenshots.py
"""
import http.server, functools, threading, io
from pathlib import Path
from playwright.sync_api import sync_playwright
from PIL import Image
ROOT = Path(__file__).resolve().parents[1]
root = ROOT / "_build" / "html"; out = ROOT / "docs" / "screenshots"; out.mkdir(parents=True, exist_ok=True)
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root)); h.log_message = lambda *a: None
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), h); threading.Thread(target=s.serve_forever, daemon=True).start()
url = f"http://127.0.0.1:{s.server_address[1]}/"
pages = ["intro", "training-time", "efficient-methods", "explorers"]
with sync_playwright() as pw:
    b = pw.chromium.launch(executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox", "--disable-gpu"])
    for w in (1400, 390):
        p = b.new_page(viewport={"width": w, "height": 1000})
        for name in pages:
            p.goto(url + f"book/{name}.html"); p.wait_for_timeout(2500)
            png = p.screenshot(full_page=True)
            img = Image.open(io.BytesIO(png)).convert("RGB")
            # Keep each under ~400 KB: cap the height, then quantise to a palette.
            img = img.crop((0, 0, img.width, min(img.height, 6000 if w == 390 else 4500)))
            for colors in (128, 64, 32):
                q = img.quantize(colors=colors)
                buf = io.BytesIO(); q.save(buf, "PNG", optimize=True)
                if buf.tell() < 400_000:
                    break
            if buf.tell() >= 400_000:
                scale = (400_000 / buf.tell()) ** 0.5
                q = img.resize((int(img.width * scale), int(img.height * scale))).quantize(colors=64)
                buf = io.BytesIO(); q.save(buf, "PNG", optimize=True)
            (out / f"{name}-{w}.png").write_bytes(buf.getvalue())
            print(name, w, buf.tell())
        p.close()
    b.close()
