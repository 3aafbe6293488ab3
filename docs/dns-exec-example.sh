#!/bin/sh
# An example program for gangway's `exec` DNS provider (EXEC_PATH), for
# Cloudflare's DNS API. UNTESTED HERE: gangway's tests cannot reach a hosted
# DNS service. Read it, adapt it, and try it against Let's Encrypt's staging
# directory (caServer = "staging") first.
#
# gangway runs it as
#   dns-exec-example.sh present _acme-challenge.example.com. <value>
#   dns-exec-example.sh cleanup _acme-challenge.example.com. <value>
# Exit status 0 is success; anything written on stderr is shown by gangway
# when it fails.
#
# Needs curl and jq, and in gangway's environment:
#   CF_API_TOKEN  an API token allowed to edit the zone's DNS records
#                 (or CF_API_TOKEN_FILE naming a file that holds it)
#   CF_ZONE       the zone, e.g. example.com
set -eu

action=$1
fqdn=${2%.}            # the API wants the name without its final dot
value=$3
api=https://api.cloudflare.com/client/v4

if [ -z "${CF_API_TOKEN:-}" ] && [ -n "${CF_API_TOKEN_FILE:-}" ]; then
  CF_API_TOKEN=$(cat "$CF_API_TOKEN_FILE")
fi
: "${CF_API_TOKEN:?set CF_API_TOKEN or CF_API_TOKEN_FILE}"
: "${CF_ZONE:?set CF_ZONE to the zone, e.g. example.com}"

call() { # METHOD PATH [JSON]
  curl -fsS -X "$1" "$api$2" \
    -H "Authorization: Bearer $CF_API_TOKEN" \
    -H "Content-Type: application/json" \
    ${3:+--data "$3"}
}

zone_id=$(call GET "/zones?name=$CF_ZONE" | jq -r '.result[0].id // empty')
[ -n "$zone_id" ] || { echo "zone $CF_ZONE not found for this token" >&2; exit 1; }

case $action in
  present)
    body=$(jq -n --arg n "$fqdn" --arg c "$value" '{type: "TXT", name: $n, content: $c, ttl: 120}')
    call POST "/zones/$zone_id/dns_records" "$body" >/dev/null
    ;;
  cleanup)
    ids=$(call GET "/zones/$zone_id/dns_records?type=TXT&name=$fqdn" |
      jq -r --arg c "$value" '.result[] | select(.content == $c or .content == "\"" + $c + "\"") | .id')
    for id in $ids; do
      call DELETE "/zones/$zone_id/dns_records/$id" >/dev/null
    done
    ;;
  *)
    echo "unknown action: $action (expected present or cleanup)" >&2
    exit 2
    ;;
esac
