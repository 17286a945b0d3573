#!/usr/bin/env python3
"""pty_run.py [--stdin FILE] [--answer PROMPT TEXT]... OUT -- COMMAND [ARGS...]

Runs COMMAND on a new pseudo-terminal, which becomes its controlling
terminal (/dev/tty) and its stdout and stderr; its stdin is FILE, else the
terminal. Output post-processing is off on the terminal (no ONLCR), so OUT
holds exactly the bytes the command and its children wrote to the terminal,
and a CR in OUT is one they wrote. Exits with COMMAND's exit status (128+N
when signal N ended it).

Each --answer is typed (TEXT and Enter) once the terminal shows PROMPT,
in their order, each after the PROMPT that follows the one answered
before: a user who types when asked, never ahead. A PROMPT of an answer
already used that shows again once all are used gets end of input
(Ctrl-D), so a command that asks more often than expected does not wait
forever.

pty_run.py --check OUT
Exits 0 when OUT holds no byte that would drive a terminal: none below 0x20
but \\n, no DEL (0x7f), no C1 control (the bytes 0x80-0x9f outside a
well-formed UTF-8 sequence, among them the 8-bit CSI 0x9b, nor U+0080-U+009F
written as UTF-8); else 1, naming each such byte and where it is.
"""
import os
import pty
import sys
import termios


def check(path):
    data = open(path, "rb").read()
    bad = []
    i = 0
    while i < len(data):
        b = data[i]
        if (b < 0x20 and b != 0x0A) or b == 0x7F:
            bad.append((i, f"0x{b:02x}"))
            i += 1
            continue
        if b < 0x80:
            i += 1
            continue
        # A well-formed UTF-8 sequence (Python's strict decoder decides).
        for length in (2, 3, 4):
            try:
                char = data[i:i + length].decode("utf-8")
            except UnicodeDecodeError:
                continue
            if len(char) == 1:
                if 0x80 <= ord(char) <= 0x9F:
                    bad.append((i, f"U+{ord(char):04X}"))
                i += length
                break
        else:
            bad.append((i, f"0x{b:02x} (not UTF-8)"))
            i += 1
    for at, what in bad[:20]:
        context = data[max(0, at - 20):at + 20]
        print(f"{path}: byte {at}: {what} in {context!r}")
    return 1 if bad else 0


def run(stdin, out, argv, answers):
    pid, master = pty.fork()
    if pid == 0:
        try:
            attrs = termios.tcgetattr(1)
            attrs[1] &= ~termios.OPOST
            termios.tcsetattr(1, termios.TCSANOW, attrs)
            if stdin is not None:
                fd = os.open(stdin, os.O_RDONLY)
                os.dup2(fd, 0)
                os.close(fd)
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    data = bytearray()
    prompts = {prompt for prompt, _ in answers}
    pending = list(answers)
    searched = 0  # where the next prompt is looked for in data
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every writer closed the terminal
            break
        if not chunk:
            break
        data += chunk
        while True:
            if pending:
                prompt, text = pending[0]
                at = data.find(prompt, searched)
                if at < 0:
                    break
                pending.pop(0)
                os.write(master, text + b"\n")
            else:
                found = [(data.find(p, searched), p) for p in prompts]
                found = [(at, p) for at, p in found if at >= 0]
                if not found:
                    break
                at, prompt = min(found)
                os.write(master, b"\x04")
            searched = at + len(prompt)
    _, status = os.waitpid(pid, 0)
    os.close(master)
    with open(out, "wb") as f:
        f.write(data)
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def main(args):
    if len(args) == 2 and args[0] == "--check":
        return check(args[1])
    stdin = None
    answers = []
    while args[:1] in (["--stdin"], ["--answer"]):
        if args[0] == "--stdin" and len(args) > 1:
            stdin, args = args[1], args[2:]
        elif args[0] == "--answer" and len(args) > 2:
            answers.append((os.fsencode(args[1]), os.fsencode(args[2])))
            args = args[3:]
        else:
            break
    if len(args) < 3 or args[1] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    return run(stdin, args[0], args[2:], answers)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
