"""Runs Schemathesis, with all its checks, against a fresh `parley demo`.

The document must state the real rules: a request it allows is accepted
and one it forbids is refused. This starts the demo on a free port in a
temporary folder, signs in a dedicated admin (its id kept away from the
small ids generated cases try, so no case changes that admin's own
password), and runs every phase with a fixed seed. `logout` is left out:
it would revoke the token the run uses; so is the widget's event stream,
whose valid requests never end.
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


def call(base, method, path, body=None, token=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method)
    req.add_header("content-type", "application/json")
    if token:
        req.add_header("authorization", "Bearer " + token)
    with urllib.request.urlopen(req, timeout=30) as res:
        return json.loads(res.read() or b"null")


def main():
    binary = os.environ["PARLEY_BIN"]
    seed = os.environ.get("SCHEMATHESIS_SEED", "20261121")
    examples = os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "20")
    workdir = tempfile.mkdtemp(prefix="parley-schemathesis-")
    # Generated cases register many endpoints; the bound per tenant is
    # tested elsewhere and would only turn them all into 422 here.
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PARLEY_LISTEN": "127.0.0.1:0",
        "PARLEY_LOG": "error",
        "PARLEY_RATE_LIMITS": "off",
        "PARLEY_WEBHOOK_ENDPOINTS_PER_TENANT": "1000",
    }
    server = subprocess.Popen([binary, "demo"], cwd=workdir, env=env, stdout=subprocess.PIPE, text=True)
    try:
        base = None
        for line in server.stdout:
            m = re.match(r"Parley listening on (\S+)", line)
            if m:
                base = m.group(1)
                break
        if base is None:
            sys.exit("parley demo did not start")
        creds = call(base, "GET", "/sandbox/credentials")
        demo_admin = creds["mobile_token"]
        for n in range(8):
            call(base, "POST", "/api/v1/admin/operators", {"email": f"filler{n}@sandbox.parley.test", "name": f"Filler {n}", "password": "a filler password", "role": "agent"}, demo_admin)
        password = "the schemathesis admin password"
        call(base, "POST", "/api/v1/admin/operators", {"email": "schemathesis@sandbox.parley.test", "name": "Schemathesis", "password": password, "role": "admin"}, demo_admin)
        token = call(base, "POST", "/api/v1/mobile/login", {"email": "schemathesis@sandbox.parley.test", "password": password})["token"]
        # Something to read for the routes that list.
        call(base, "POST", "/api/v1/widget/conversations", {"token": creds["widget_token"], "visitor_uuid": "seed-visitor", "message": "hello", "privacy_accepted": True})

        st = os.path.join(os.path.dirname(sys.executable), "schemathesis")
        args = [
            st, "--config-file", os.path.join(HERE, "schemathesis.toml"), "run", base + "/openapi.json",
            "--checks", "all",
            "-H", "Authorization: Bearer " + token,
            # Filters given together must all match, so both exclusions
            # are one pattern. A widget stream answers for as long as its
            # client listens: a valid request never ends (the suite tests
            # the streams instead).
            "--exclude-path-regex", "logout|/widget/conversations/[^/]+/events$",
            "--seed", seed,
            "--max-examples", examples,
            "--generation-database", "none",
            "--no-color",
        ]
        sys.exit(subprocess.call(args, cwd=workdir))
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
