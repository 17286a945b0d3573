"""The login part of https_registry.py --tfe: the OAuth 2.0
authorization-code flow with PKCE that `terraform login` uses (login.v1).

  GET  /app/oauth/authorize?...     302 to redirect_uri?code=..&state=.. (open)
  POST /oauth/token                 the --token, for a code and its PKCE verifier

With --login-lifetime SECONDS, /oauth/token issues a new access token
living that long with a refresh token instead, takes the refresh_token
grant (each refresh token once: a new one comes with each answer), and
only an unexpired issued token is accepted where the token is wanted.
"""

import base64
import hashlib
import os
import threading
import time
import urllib.parse

from https_serving import Service


class Login(Service):
    def __init__(self, base_url, lifetime=0):
        self.base_url = base_url
        self.lifetime = lifetime
        self.codes = {}  # {code: (code_challenge, redirect_uri)}
        self.issued = {}  # {access token: monotonic expiry}
        self.refresh_tokens = set()
        self.lock = threading.Lock()

    def unexpired(self, token):
        with self.lock:
            return time.monotonic() < self.issued.get(token, 0)

    def issue(self):
        """A new access token and refresh token (--login-lifetime), as the token endpoint answers them."""
        access = "login-at-" + base64.urlsafe_b64encode(os.urandom(12)).decode()
        refresh = "login-rt-" + base64.urlsafe_b64encode(os.urandom(12)).decode()
        with self.lock:
            self.issued[access] = time.monotonic() + self.lifetime
            self.refresh_tokens.add(refresh)
        return {"access_token": access, "token_type": "bearer", "expires_in": self.lifetime,
                "refresh_token": refresh}

    def services(self):
        """The discovery entry: absolute login URLs."""
        return {"login.v1": {"client": "terraform-cli", "grant_types": ["authz_code"],
                             "authz": self.base_url + "/app/oauth/authorize",
                             "token": self.base_url + "/oauth/token", "ports": [10000, 10010]}}

    def get(self, handler, path):
        if path != "/app/oauth/authorize":
            return False
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(handler.path).query)
        code = base64.urlsafe_b64encode(os.urandom(18)).decode()
        redirect = query.get("redirect_uri", [""])[0]
        with self.lock:
            self.codes[code] = (query.get("code_challenge", [""])[0], redirect)
        location = redirect + "?" + urllib.parse.urlencode({"code": code, "state": query.get("state", [""])[0]})
        handler.reply(302, b"", "text/plain", {"Location": location})
        return True

    def post(self, handler, path, body):
        if path != "/oauth/token":
            return False
        form = urllib.parse.parse_qs(body.decode("ascii", "replace"))
        if self.lifetime and form.get("grant_type", [""])[0] == "refresh_token":
            with self.lock:
                known = form.get("refresh_token", [""])[0] in self.refresh_tokens
                self.refresh_tokens.discard(form.get("refresh_token", [""])[0])
            if known and form.get("client_id", [""])[0] == "terraform-cli":
                handler.reply_json(200, self.issue())
            else:
                handler.reply_json(400, {"error": "invalid_grant", "error_description": "unknown refresh token"})
            return True
        code, verifier = form.get("code", [""])[0], form.get("code_verifier", [""])[0]
        with self.lock:
            challenge, redirect = self.codes.pop(code, (None, None))
        expected = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
        if challenge is None or challenge != expected or form.get("redirect_uri", [""])[0] != redirect \
                or form.get("grant_type", [""])[0] != "authorization_code":
            handler.reply_json(400, {"error": "invalid_grant"})
        elif self.lifetime:
            handler.reply_json(200, self.issue())
        else:
            handler.reply_json(200, {"access_token": handler.token, "token_type": "bearer"})
        return True
