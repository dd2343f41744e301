#!/usr/bin/env bash
# The one list of Debian packages this project needs (make deps, make test-deps, .ci/run).
# Checks what is missing and installs it when it can (root, or sudo without a password);
# otherwise stops with the one apt-get line to run.
#
#   scripts/deps.sh run    conversion: make run (poppler-utils, LibreOffice, fonts, Tesseract)
#   scripts/deps.sh test   run + what the tests need (Chromium for the browser tests)
#   scripts/deps.sh ci     test + what the build itself needs (a bare machine: make, gcc, git)
set -euo pipefail

# poppler-utils renders PDFs (pdfinfo, pdftoppm, pdftotext); LibreOffice converts Word, Excel
# and PowerPoint files, with fonts to lay them out; tesseract-ocr with its English data reads the
# text of pages that carry none (photos, scans: issue 28); libvips-tools (vipsthumbnail) makes
# the pages' WebP renditions the viewer offers by screen size (issue 29). The fonts-* after them
# are the fallback fonts template pages draw other scripts with (Hebrew, Arabic, Thai, Indic,
# Chinese, Japanese, Korean, emoji: actors/convert/template_shape.go).
run_pkgs=(poppler-utils libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui fonts-liberation
	tesseract-ocr tesseract-ocr-eng libvips-tools
	fonts-dejavu-core fonts-noto-core fonts-droid-fallback fonts-nanum fonts-noto-color-emoji fonts-symbola)
# chromium runs the viewer's, the catalog render's and the OAuth consent page's browser tests.
test_pkgs=(chromium)
# a fresh machine of this kind has Go in /usr/local/go but may lack these.
build_pkgs=(make gcc git ca-certificates)

case "${1:-run}" in
run) want=("${run_pkgs[@]}") ;;
test) want=("${run_pkgs[@]}" "${test_pkgs[@]}") ;;
ci) want=("${build_pkgs[@]}" "${run_pkgs[@]}" "${test_pkgs[@]}") ;;
list) echo "${build_pkgs[@]} ${run_pkgs[@]} ${test_pkgs[@]}"; exit 0 ;;
*) echo "usage: $0 run|test|ci|list" >&2; exit 2 ;;
esac

if ! command -v dpkg-query >/dev/null; then
	# Not Debian: check the programs themselves and name the packages.
	miss=()
	for c in pdftoppm pdfinfo pdftotext soffice tesseract vipsthumbnail; do command -v "$c" >/dev/null || miss+=("$c"); done
	if [[ "${1:-run}" != run ]] && ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then miss+=(chromium); fi
	if ((${#miss[@]})); then
		echo "missing programs: ${miss[*]} (on Debian: apt-get install -y ${want[*]}); install them and run make again" >&2
		exit 1
	fi
	exit 0
fi

missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
((${#missing[@]})) || exit 0

line="apt-get install -y --no-install-recommends ${missing[*]}"
if [[ $(id -u) == 0 ]]; then
	sudo=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
	sudo=(sudo)
else
	echo "missing Debian packages: ${missing[*]}" >&2
	echo "run this as root, then make again:" >&2
	echo "  sudo apt-get update && sudo $line" >&2
	exit 1
fi
echo "==> installing missing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
