"""Put the VM's tokenizer files (transformers 5.24) into a converted folder; keep them only if they
encode a test string to llama.cpp's ids (ids.json, made on the VM from the GGUF). Exit 1 if neither
the VM's nor the card's own conversion does."""

import json
import shutil
import sys
from pathlib import Path

from transformers import AutoTokenizer

folder, vm, name = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
want = json.loads(Path(sys.argv[4]).read_text())
text, ids = want["text"], want[name]
backup = folder / "card-tokenizer"
backup.mkdir(exist_ok=True)
for f in folder.glob("tokenizer*"):
    if f.is_file():
        shutil.copy(f, backup / f.name)


def ok(label):
    got = AutoTokenizer.from_pretrained(folder).encode(text)
    same = got == ids
    print(
        f"{name} {label}: {len(got)} ids, llama.cpp {len(ids)}, same={same}, first {got[:6]} vs {ids[:6]}",
        flush=True,
    )
    return same


card_ok = ok("card conversion")
for f in vm.iterdir():
    shutil.copy(f, folder / f.name)
if ok("VM tokenizer files"):
    sys.exit(0)
for f in backup.iterdir():
    shutil.copy(f, folder / f.name)
sys.exit(0 if card_ok else 1)
