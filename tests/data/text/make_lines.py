#!/usr/bin/env python3
"""Writes generated.txt beside it: template sentences with numbers, amounts, dates, times,
abbreviations, list labels, quotes, brackets and non-ASCII names, drawn with a fixed seed (the
file is shipped; rerun this only to change it). Used with hand.txt by the tokenizer tests."""
import os
import random

R = random.Random(20261124)
TITLES = ["Mr.", "Mrs.", "Ms.", "Dr.", "Prof.", "Capt.", "Sgt.", "Rev.", "St."]
NAMES = ["Smith", "García", "Müller", "O'Brien", "Nguyen", "Kowalski", "Dubois", "Jørgensen",
         "Novák", "Yılmaz", "Bergström", "Ibáñez", "Łukasz", "Chen", "Okafor", "Brontë"]
CITIES = ["Zürich", "São Paulo", "Montréal", "Kraków", "Reykjavík", "Malmö", "Düsseldorf",
          "Bogotá", "Córdoba", "Nice", "Turin", "Leeds", "Boston", "Perth", "Ōsaka", "Tromsø"]
THINGS = ["tickets", "apples", "books", "chairs", "shares", "bottles", "bicycles", "lamps"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
SHORT = ["Jan.", "Feb.", "Mar.", "Apr.", "Aug.", "Sept.", "Oct.", "Nov.", "Dec."]
VERBS = ["bought", "sold", "ordered", "counted", "shipped", "returned", "found", "lost"]
CURR = ["$", "£", "€", "¥"]


def ordinal(n):
    suf = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suf}"


def amount():
    c = R.choice(CURR)
    k = R.randrange(6)
    if k == 0:
        return f"{c}{R.randrange(1, 100)}"
    if k == 1:
        return f"{c}{R.randrange(1, 1000)}.{R.randrange(100):02d}"
    if k == 2:
        return f"{c}{R.randrange(1, 100)},{R.randrange(1000):03d}"
    if k == 3:
        return f"{c}{R.randrange(1, 10)},{R.randrange(1000):03d}.{R.randrange(100):02d}"
    if k == 4:
        return f"{R.randrange(2, 90)} {R.choice(['dollars', 'pounds', 'euros', 'cents'])}"
    return f"{c}{R.randrange(1, 10)}.{R.randrange(10)}m"


def date():
    d, m, y = R.randrange(1, 29), R.randrange(12), R.randrange(1850, 2040)
    k = R.randrange(6)
    if k == 0:
        return f"{MONTHS[m]} {d}, {y}"
    if k == 1:
        return f"{d} {MONTHS[m]} {y}"
    if k == 2:
        return f"{R.choice(SHORT)} {ordinal(d)}"
    if k == 3:
        return f"{y}-{m + 1:02d}-{d:02d}"
    if k == 4:
        return f"{d:02d}/{m + 1:02d}/{y}"
    return f"the {ordinal(d)} of {MONTHS[m]}"


def time_():
    h, m = R.randrange(24), R.randrange(60)
    k = R.randrange(4)
    if k == 0:
        return f"{h:02d}:{m:02d}"
    if k == 1:
        return f"{h % 12 + 1}:{m:02d} {R.choice(['a.m.', 'p.m.'])}"
    if k == 2:
        return f"{h % 12 + 1} o'clock"
    return f"{h % 12 + 1}{R.choice(['am', 'pm'])}"


def number():
    k = R.randrange(7)
    if k == 0:
        return str(R.randrange(0, 100))
    if k == 1:
        return f"{R.randrange(1, 1000)},{R.randrange(1000):03d}"
    if k == 2:
        return f"{R.randrange(0, 100)}.{R.randrange(1, 1000)}"
    if k == 3:
        return ordinal(R.randrange(1, 120))
    if k == 4:
        return f"{R.randrange(1, 50)}-{R.randrange(50, 100)}"
    if k == 5:
        return f"{R.randrange(1, 100)}%"
    return f"{R.randrange(1, 10)}.{R.randrange(10)}%"


def person():
    return f"{R.choice(TITLES)} {R.choice(NAMES)}"


TEMPLATES = [
    lambda: f"{person()} {R.choice(VERBS)} {number()} {R.choice(THINGS)} for {amount()} on {date()}.",
    lambda: f"On {date()}, {person()} flew from {R.choice(CITIES)} to {R.choice(CITIES)} at {time_()}.",
    lambda: f"The price went from {amount()} to {amount()}, a rise of {number()}.",
    lambda: f"\"Is it {time_()} already?\" asked {person()}.",
    lambda: f"In {R.randrange(1700, 2030)}, about {number()} of the people in {R.choice(CITIES)} voted (see p. {R.randrange(2, 400)}).",
    lambda: f"Items: (a) {R.choice(THINGS)}, (b) {R.choice(THINGS)}, and (c) {number()} {R.choice(THINGS)}.",
    lambda: f"{R.randrange(1, 9)}. {R.choice(VERBS).capitalize()} the {R.choice(THINGS)}; {R.randrange(1, 9)}. count them again.",
    lambda: f"{person()} said: 'We expect {number()} growth in {R.randrange(1990, 2035)}, e.g. in {R.choice(CITIES)}.'",
    lambda: f"Opening hours are {time_()} to {time_()}, Mon.-Fri., except on {date()}.",
    lambda: f"The {ordinal(R.randrange(1, 60))} edition [{R.randrange(1900, 2025)}] sold {number()} copies, etc.",
    lambda: f"Why did {person()} pay {amount()}? Nobody knows!",
    lambda: f"{R.choice(CITIES)} is {R.randrange(2, 900)} km (about {R.randrange(2, 600)} miles) from {R.choice(CITIES)}.",
    lambda: f"From {R.randrange(1800, 1950)} to {R.randrange(1950, 2030)}, the rate fell from {number()} to {number()}.",
    lambda: f"Room {R.randrange(1, 999)}, {ordinal(R.randrange(1, 40))} floor — ask for {person()}.",
    lambda: f"“{R.choice(THINGS).capitalize()}… {R.choice(THINGS)}…” murmured {person()}.",
    lambda: f"Score: {R.randrange(0, 9)}-{R.randrange(0, 9)} at half-time; {R.randrange(0, 9)}:{R.randrange(0, 9)} at the end!",
]


def main():
    lines = [R.choice(TEMPLATES)() for _ in range(240)]
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "generated.txt")
    with open(out, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
