#!/bin/sh
# Postgres image init hook (/docker-entrypoint-initdb.d): the service's login role (service-role.sql).
set -e
psql --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v service_role="${KILN_SERVICE_ROLE:-kiln_service}" -v service_password="$KILN_SERVICE_PASSWORD" \
  -f /docker-entrypoint-initdb.d/service-role.sql.in
