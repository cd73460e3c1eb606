#!/usr/bin/env bash
# API hardening, measured against a real `trainguard api` on the local ClickHouse server
# (services up: `bash deploy/services.sh start`): a 1 GB POST without a token, with one,
# chunked; a 100 KB query string; how soon a revoked token stops working.
#
#   bash bench/api_limits.sh
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. deploy/.local/env
TMP=$(mktemp -d)
trap 'kill $API 2>/dev/null; rm -rf "$TMP"' EXIT
export TG_CLICKHOUSE_MODE=server TG_CLICKHOUSE_DATABASE=measure_api TG_API_PORT=18711 TG_ACT_EXECUTOR=local TG_WEBHOOK_KEY_FILE=$TMP/webhook.key
.venv/bin/trainguard api > "$TMP/api.log" 2>&1 &
API=$!
for i in $(seq 1 100); do curl -s -o /dev/null http://127.0.0.1:18711/healthz && break; sleep 0.2; done
PID=$(pgrep -P $API -f . | head -1); PID=${PID:-$API}
rss() { grep VmRSS /proc/$API/status | awk '{print $2}'; }
echo "rss before: $(rss) kB"
head -c 1073741824 /dev/zero > $TMP/onegb.bin
echo "--- 1 GB POST, no token"
curl -s -o $TMP/r1.txt -w "status %{http_code} in %{time_total}s, uploaded %{size_upload} bytes\n" -X POST -H "Content-Type: application/json" -T $TMP/onegb.bin http://127.0.0.1:18711/v1/incidents/x/acknowledge; cat $TMP/r1.txt; echo
echo "rss after: $(rss) kB"
TOKEN=$(.venv/bin/trainguard api token-create measurer --role operator 2>/dev/null)
echo "--- 1 GB POST, operator token"
curl -s -o $TMP/r2.txt -w "status %{http_code} in %{time_total}s, uploaded %{size_upload} bytes\n" -X POST -H "Authorization: Bearer $TOKEN" -H "Content-Type: application/json" -T $TMP/onegb.bin http://127.0.0.1:18711/v1/incidents/x/acknowledge; cat $TMP/r2.txt; echo
echo "--- 1 GB chunked POST, operator token"
curl -s -o $TMP/r3.txt -w "status %{http_code} in %{time_total}s, uploaded %{size_upload} bytes\n" -X POST -H "Authorization: Bearer $TOKEN" -H "Transfer-Encoding: chunked" -H "Content-Type: application/json" -T - < $TMP/onegb.bin http://127.0.0.1:18711/v1/incidents/x/acknowledge; cat $TMP/r3.txt; echo
echo "rss after: $(rss) kB"
echo "--- 100 KB query string"
Q=$(head -c 100000 /dev/zero | tr '\0' a)
curl -s -i "http://127.0.0.1:18711/v1/gpus?node=$Q" | tr -d '\r' | grep -iE "^HTTP|content-type|^\{"; echo
echo "--- 1 GB POST, no token, no Expect: 100-continue (the body is pushed at once)"
curl -s -o $TMP/r4.txt -w "status %{http_code} in %{time_total}s, uploaded %{size_upload} bytes\n" -X POST -H "Expect:" -H "Content-Type: application/json" -T $TMP/onegb.bin http://127.0.0.1:18711/v1/incidents/x/acknowledge; cat $TMP/r4.txt; echo
echo "rss after: $(rss) kB"
echo "--- revocation"
curl -s -o /dev/null -w "before revoke: %{http_code}\n" -H "Authorization: Bearer $TOKEN" http://127.0.0.1:18711/v1/me
.venv/bin/trainguard api token-revoke measurer >/dev/null 2>&1
T0=$(date +%s.%N)
while true; do c=$(curl -s -o /dev/null -w "%{http_code}" -H "Authorization: Bearer $TOKEN" http://127.0.0.1:18711/v1/me); [ "$c" = 401 ] && break; sleep 0.05; done
echo "revoked token refused $(echo "$(date +%s.%N) - $T0" | bc) s after token-revoke returned"
