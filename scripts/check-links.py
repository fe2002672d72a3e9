#!/usr/bin/env python3
"""The repository documents itself: every relative link in its Markdown files must resolve
inside the checkout, and nothing may point outside it (a user's clone has nothing beside it).

Checks every tracked *.md file (git ls-files), skipping node_modules: each [text](target) or
<a href="target"> whose target is not a URL with a scheme or a pure #anchor must name a file or
folder that exists, and must not climb out of the repository. Prints each broken link and exits
1 if there is any."""

import os
import re
import subprocess
import sys

root = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=True).stdout.strip()
files = subprocess.run(["git", "ls-files", "*.md"], cwd=root, capture_output=True, text=True, check=True).stdout.split()
link = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|href=\"([^\"]+)\"")
fence = re.compile(r"^\s*(```|~~~)")

broken = []
checked = 0
for rel in files:
    if "node_modules/" in rel:
        continue
    path = os.path.join(root, rel)
    in_code = False
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if fence.match(line):
                in_code = not in_code
                continue
            if in_code:
                continue
            for m in link.finditer(line):
                target = m.group(1) or m.group(2)
                if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("#"):
                    continue
                checked += 1
                target = target.split("#", 1)[0]
                resolved = os.path.normpath(os.path.join(os.path.dirname(path), target))
                if os.path.relpath(resolved, root).startswith(".."):
                    broken.append(f"{rel}:{lineno}: {target} points outside the repository")
                elif not os.path.exists(resolved):
                    broken.append(f"{rel}:{lineno}: {target} does not exist")

for b in broken:
    print(b)
print(f"links: {checked} relative links in {len(files)} Markdown files, {len(broken)} broken")
sys.exit(1 if broken else 0)
