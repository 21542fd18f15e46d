# SPDX-License-Identifier: Apache-2.0
"""The fixed parts of the ``--report`` page (:mod:`.report`) and the text helpers its parts share.

:data:`CSS` and :data:`SCRIPT` are inlined into the page (its Content-Security-Policy allows
inline style and script only, nothing fetched). ``_e`` escapes any value for HTML text and
attributes, ``_shorten`` cuts a label to a width at a word or operator boundary with an
ellipsis, :func:`operator_label` labels a group of operators by its compute operators,
``_format_number`` writes a count with a k/M/G prefix.
"""

from __future__ import annotations

import html

#: The page's stylesheet.
CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#111827;
background:#f9fafb}
header{background:#111827;color:#f9fafb;padding:16px 24px}
header h1{margin:0 0 4px;font-size:20px}
header p{margin:2px 0;font-size:13px;color:#d1d5db}
header code{background:#374151;color:#f9fafb}
main{padding:8px 24px 40px}
section{background:#fff;border:1px solid #e5e7eb;border-radius:8px;margin:16px 0;padding:12px 16px}
h2{font-size:16px;margin:4px 0 10px}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{border:1px solid #e5e7eb;border-radius:6px;padding:8px 12px;min-width:150px;
background:#f9fafb}
.card b{display:block;font-size:18px}
.card span{font-size:12px;color:#4b5563}
.pass{color:#15803d}.fail{color:#b91c1c}
.modelled{font-size:11px;font-weight:600;color:#92400e;background:#fef3c7;border-radius:4px;
padding:1px 5px;margin-left:6px}
.measured{font-size:11px;font-weight:600;color:#1e40af;background:#dbeafe;border-radius:4px;
padding:1px 5px;margin-left:6px}
table{border-collapse:collapse;font-size:12.5px;width:100%}
th,td{border-bottom:1px solid #e5e7eb;padding:4px 6px;text-align:left;vertical-align:top}
th{background:#f3f4f6;position:sticky;top:0}
td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.highlight td{background:#fef9c3}
.scroll{overflow:auto;max-height:75vh;border:1px solid #e5e7eb;border-radius:6px}
.legend{display:flex;flex-wrap:wrap;gap:12px;font-size:12px;margin:6px 0}
.legend i{display:inline-block;width:14px;height:14px;border-radius:3px;margin-right:4px;
vertical-align:middle;border:1px solid #6b7280}
svg text{font-family:system-ui,sans-serif}
g.node{cursor:pointer}
g.node.highlight rect{stroke:#f59e0b;stroke-width:3}
.note{font-size:12px;color:#4b5563}
code{background:#f3f4f6;padding:0 3px;border-radius:3px}
"""

# Highlights the nodes of one subgraph and links refusal rows to their node. Errors are recorded
# on <body data-errors> so a headless check (scripts/check_report_html.sh) can see them.
SCRIPT = """
(function(){
  var errors=[];
  window.addEventListener('error',function(e){errors.push(String(e.message));
    document.body.setAttribute('data-errors',errors.join(' | '));});
  function nodes(){return document.querySelectorAll('g.node');}
  function clear(){nodes().forEach(function(n){n.classList.remove('highlight');});
    document.querySelectorAll('tr.highlight').forEach(function(r){r.classList.remove('highlight');});}
  nodes().forEach(function(n){
    n.addEventListener('click',function(){
      clear();
      var group=n.getAttribute('data-group');
      nodes().forEach(function(m){if(group&&m.getAttribute('data-group')===group){
        m.classList.add('highlight');}});
      n.classList.add('highlight');
      var row=document.getElementById('row-'+n.getAttribute('data-binding'));
      if(row){row.classList.add('highlight');}
    });
  });
  document.querySelectorAll('tr[data-node]').forEach(function(row){
    row.addEventListener('click',function(){
      clear(); row.classList.add('highlight');
      var node=document.getElementById('node-'+row.getAttribute('data-node'));
      if(node){node.classList.add('highlight');
        if(node.scrollIntoView){node.scrollIntoView({block:'center',inline:'center'});}}
    });
  });
  document.body.setAttribute('data-ready','1');
})();
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _format_number(value: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.2f} {unit}"
    return f"{value:g}"


def _shorten(text: str, width: int, separator: str | None = None) -> str:
    """``text`` in at most ``width`` characters, cut at the last ``separator`` (" + ", ", ")
    or space that fits, before an ellipsis; mid-word only when not even one word fits."""
    if len(text) <= width:
        return text
    for mark in (separator, " "):
        if not mark:
            continue
        ellipsis = " …" if mark.strip() == "+" else "…"
        cut = text.rfind(mark, 0, width - len(ellipsis) + len(mark))
        kept = text[:cut].rstrip(" ,+") if cut > 0 else ""
        if kept:
            return kept + ellipsis
    return text[: width - 1] + "…"


#: Operators that only wrap a quantized operator (its inputs' dequantize, its result's quantize).
QDQ_OPERATORS = frozenset({"quantize", "dequantize"})


def operator_label(operators: list[str], width: int) -> str:
    """A short label for a group of Relax operators (``relax.`` dropped): the quantize/
    dequantize wrappers left out when the group computes something else (marked "q8"), the
    rest joined by " + " and cut between operators with an ellipsis (:func:`_shorten`)."""
    names = [op.removeprefix("relax.") for op in operators]
    core = [name for name in names if name not in QDQ_OPERATORS]
    if not core or len(core) == len(names):
        return _shorten(" + ".join(names), width, " + ")
    return _shorten("q8 " + " + ".join(core), width, " + ")
