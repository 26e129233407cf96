"""OpenAI-style API errors: `{"error": {"message", "type", "param", "code"}}` with the HTTP status that goes with it."""

from __future__ import annotations


class APIError(Exception):
    def __init__(self, status: int, message: str, *, type: str = "invalid_request_error", param: str | None = None,
                 code: str | None = None, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.param = param
        self.code = code
        self.headers = headers or {}

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


def bad_request(message: str, param: str | None = None, code: str | None = None) -> APIError:
    return APIError(400, message, param=param, code=code)


def unknown_model(name: str) -> APIError:
    return APIError(404, f"The model '{name}' does not exist", param="model", code="model_not_found")


def unauthorized() -> APIError:
    return APIError(401, "Incorrect or missing API key: send it as 'Authorization: Bearer <key>'",
                    type="authentication_error", code="invalid_api_key")


def overloaded(retry_after: int) -> APIError:
    return APIError(503, "The server is busy: too many queued requests; retry later", type="server_error",
                    code="server_overloaded", headers={"Retry-After": str(retry_after)})


def shutting_down() -> APIError:
    return APIError(503, "The server is shutting down; retry later", type="server_error", code="server_shutting_down")


def internal(message: str) -> APIError:
    return APIError(500, message, type="server_error", code="internal_error")
