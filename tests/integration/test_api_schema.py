"""Property-based run of the published OpenAPI schema (schemathesis) against the real app.

Every operation gets generated valid and invalid requests with an admin token; no response
may be a 5xx, and every response must match the schema's documented status codes and bodies
where it documents them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from analytics.migrations import migrate
from analytics.store import ServerStore
from api.app import create_app
from api.auth import Role
from tests.api_fixtures import api_context, populate

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def app_and_token(services) -> Iterator[tuple[object, str]]:
    store = ServerStore(
        services.clickhouse_host, services.clickhouse_port, f"it_schema_{uuid.uuid4().hex[:8]}"
    )
    migrate(store)
    populate(store)
    context = api_context(store)
    token = context.tokens.create("schemathesis", Role.ADMIN)
    yield create_app(context), token
    store.command(f"DROP DATABASE IF EXISTS `{store.database}`")
    store.close()


def test_no_operation_fails_or_breaks_its_schema(app_and_token):
    app, token = app_and_token
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    headers = {"Authorization": f"Bearer {token}"}
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 10

    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=15,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def run(case: schemathesis.Case) -> None:
            response = case.call(headers=headers)
            assert response.status_code < 500, (
                f"{case.method} {case.formatted_path}: {response.status_code} {response.text}"
            )
            case.validate_response(
                response,
                excluded_checks=[
                    schemathesis.checks.ignored_auth,
                    # an opaque cursor is a string in the schema, but only ours decode
                    schemathesis.checks.positive_data_acceptance,
                ],
            )

        run()
