"""The TFE-like part of https_registry.py --tfe: the services HCP Terraform /
Terraform Enterprise add to discovery, and just enough of their API for
`terraform login` (with login_server.Login) and for `terraform init` with a
`cloud` block or a `remote` backend, and the authentication-token API that
`hostkeeper rotate` uses.
"""

import json
import os
import threading
import time

from https_serving import Service


class Tfe(Service):
    """The API paths (the login paths are login_server.Login's):

      GET  /api/v2/ping                                 (open; TFP-API-Version header)
      GET  /api/v2/account/details                      the user --tfe-user (token)
      GET  /api/v2/users/user-e2e/authentication-tokens  the user's one token, expiring in 2099 (token)
      GET  /api/v2/organizations/ORG[/entitlement-set]  any ORG (token)
      GET  /api/v2/organizations/ORG/workspaces/NAME    a local-execution workspace (token)
      GET  /api/v2/workspaces/ws-NAME[/current-state-version]  (token; no state: 404)
      POST /api/v2/users/user-e2e/authentication-tokens a new token, live at once, with the
                                                        requested expired-at (token)
      DELETE /api/v2/authentication-tokens/ID           destroys one it created: 204 (token)
    """

    TOKENS = "/api/v2/users/user-e2e/authentication-tokens"

    def __init__(self, user):
        self.user = user
        self.created = {}  # {token id: token}, the authentication tokens not destroyed
        self.last_id = 0
        self.lock = threading.Lock()

    def services(self):
        """Discovery entries: relative API URLs (as TFE gives)."""
        return {"tfe.v2": "/api/v2/", "tfe.v2.1": "/api/v2/", "tfe.v2.2": "/api/v2/",
                "state.v2": "/api/v2/", "motd.v1": "/api/terraform/motd"}

    @staticmethod
    def api_headers():
        return {"TFP-API-Version": "2.6", "TFP-AppName": "Terraform Enterprise", "X-TFE-Version": "v202401-1"}

    def get(self, handler, path):
        """Answers a GET for one of our paths (True), or leaves it (False)."""
        if path == "/api/v2/ping":
            handler.reply_json(200, {}, self.api_headers())
        elif path == "/api/v2/account/details":
            handler.authorized(200, {"data": {"id": "user-e2e", "type": "users", "attributes": {
                "username": self.user, "email": self.user + "@example.invalid", "is-service-account": False,
                "two-factor": {"enabled": False, "verified": False}}}}, self.api_headers())
        elif path == "/api/v2/users/user-e2e/authentication-tokens":
            handler.authorized(200, {"data": [{"id": "at-e2e", "type": "authentication-tokens", "attributes": {
                "created-at": "2026-01-01T00:00:00.000Z", "last-used-at": None, "description": "e2e",
                "token": None, "expired-at": "2099-01-01T00:00:00.000Z"}}],
                "meta": {"pagination": {"current-page": 1, "total-count": 1}}}, self.api_headers())
        elif path.startswith("/api/v2/organizations/"):
            parts = path[len("/api/v2/organizations/"):].split("/")
            if len(parts) == 1:
                handler.authorized(200, {"data": {"id": parts[0], "type": "organizations",
                                                  "attributes": {"name": parts[0], "email": "org@example.invalid"}}},
                                   self.api_headers())
            elif len(parts) == 2 and parts[1] == "entitlement-set":
                handler.authorized(200, {"data": {"id": "org-" + parts[0], "type": "entitlement-sets", "attributes": {
                    "operations": True, "private-module-registry": True, "sentinel": False, "state-storage": True,
                    "teams": False, "vcs-integrations": False}}}, self.api_headers())
            elif len(parts) == 3 and parts[1] == "workspaces":
                handler.authorized(200, self.workspace(parts[0], parts[2]), self.api_headers())
            else:
                return False
        elif path.startswith("/api/v2/workspaces/ws-"):
            parts = path[len("/api/v2/workspaces/ws-"):].split("/")
            if len(parts) == 1:
                handler.authorized(200, self.workspace("org", parts[0]), self.api_headers())
            else:
                handler.authorized(404, {"errors": [{"status": "404", "title": "not found"}]}, self.api_headers())
        else:
            return False
        return True

    def post(self, handler, path, body):
        """Answers a POST for one of our paths (True), or leaves it (False)."""
        if path == self.TOKENS:
            return self.create_token(handler, body)
        return False

    def create_token(self, handler, body):
        """POST authentication-tokens: a JSON:API document of type authentication-tokens."""
        if not handler.bearer_ok():
            handler.authorized(401, None)
            return True
        try:
            attributes = json.loads(body)["data"]["attributes"]
            expired_at = attributes.get("expired-at")
        except (ValueError, KeyError, TypeError):
            handler.reply_json(422, {"errors": [{"status": "422", "title": "invalid document"}]})
            return True
        token = "hk-e2e-rotated-" + os.urandom(16).hex()
        with self.lock:
            self.last_id += 1
            token_id = "at-%d" % self.last_id
            self.created[token_id] = token
            handler.live_tokens.add(token)
        handler.reply_json(201, {"data": {"id": token_id, "type": "authentication-tokens", "attributes": {
            "token": token, "description": attributes.get("description"), "expired-at": expired_at,
            "created-at": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())}}}, self.api_headers())
        return True

    def delete(self, handler, path):
        """DELETE authentication-tokens/ID: the token is refused from then on."""
        prefix = "/api/v2/authentication-tokens/"
        if not path.startswith(prefix):
            return False
        if not handler.bearer_ok():
            handler.authorized(401, None)
            return True
        with self.lock:
            token = self.created.pop(path[len(prefix):], None)
            if token is not None:
                handler.live_tokens.discard(token)
        if token is None:
            handler.reply_json(404, {"errors": [{"status": "404", "title": "not found"}]})
        else:
            handler.reply(204, b"", "application/json", self.api_headers())
        return True

    def workspace(self, org, name):
        return {"data": {"id": "ws-" + name, "type": "workspaces", "attributes": {
            "name": name, "execution-mode": "local", "operations": False, "terraform-version": "latest",
            "locked": False, "auto-apply": False, "setting-overwrites": {"execution-mode": True},
            "actions": {"is-destroyable": True},
            "permissions": {"can-update": True, "can-queue-run": True, "can-read-state-versions": True,
                            "can-create-state-versions": True, "can-lock": True, "can-unlock": True,
                            "can-force-unlock": True, "can-read-settings": True, "can-update-variable": True}},
            "relationships": {"organization": {"data": {"id": org, "type": "organizations"}}}}}
