"""The HTML page's inline style sheet: system fonts only, one column on a phone, a grid beside it."""

STYLE = """
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
background:#f3f5f7;color:#1c2733;-webkit-text-size-adjust:100%}
.wrap{max-width:1180px;margin:0 auto;padding:0 16px}
header{background:#0f3d3a;color:#fff;padding:18px 0 14px;margin-bottom:18px}
header h1{margin:0;font-size:22px;font-weight:650;letter-spacing:.2px}
header .sub{margin:2px 0 0;opacity:.8;font-size:13px}
nav{margin-top:8px;font-size:13px}
nav a{color:#b8efe6;margin-right:14px;text-decoration:none}
nav a:hover{text-decoration:underline}
.note{background:#fff7e0;border:1px solid #f2d48b;border-radius:8px;padding:8px 12px;font-size:14px}
.figs{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,165px),1fr));gap:12px;margin-bottom:18px}
.fig{background:#fff;border-radius:10px;padding:12px 14px;box-shadow:0 1px 2px rgba(16,24,40,.08);min-width:0}
.fig.lead{background:#0f766e;color:#fff}
.fl{font-size:12px;text-transform:uppercase;letter-spacing:.6px;opacity:.75}
.fv{font-size:26px;font-weight:680;font-variant-numeric:tabular-nums;margin:2px 0;white-space:nowrap;
overflow:hidden;text-overflow:ellipsis}
.fd{font-size:12px;opacity:.75}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,440px),1fr));gap:16px;margin-bottom:16px}
.card{background:#fff;border-radius:10px;padding:14px 16px;box-shadow:0 1px 2px rgba(16,24,40,.08);min-width:0;
container-type:inline-size}
.card h2{margin:0 0 10px;font-size:15px;font-weight:650}
.card h3{margin:16px 0 6px;font-size:13px;font-weight:650;color:#475569}
.chart{display:block;width:100%;height:auto;margin-bottom:10px;max-width:520px}
.chart .lbl{font-size:11.5px;fill:#334155}
.chart .val{font-size:11.5px;fill:#0f172a;font-weight:600}
.chart .tiny{font-size:11px;fill:#475569}
.chart .track{fill:#e8edf2}
.chart .axis{stroke:#cbd5e1;stroke-width:1}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch}
table{width:100%;border-collapse:collapse;font-size:13px;font-variant-numeric:tabular-nums}
th,td{padding:5px 6px;border-bottom:1px solid #edf0f3;white-space:nowrap}
td{text-align:right}
thead th{font-size:11px;text-transform:uppercase;letter-spacing:.5px;color:#64748b;font-weight:600;text-align:right}
thead th:first-child,tbody th{text-align:left;font-weight:500}
tbody th{max-width:170px;overflow:hidden;text-overflow:ellipsis}
tr[data-rest] th{color:#64748b;font-style:italic}
.muted{color:#64748b;font-size:13px}
.prov{list-style:none;margin:0;padding:0}
.prov li{padding:6px 0;border-bottom:1px solid #edf0f3;font-size:13px}
.prov .k{display:block;color:#475569;font-weight:600;margin-bottom:2px}
.tag{display:inline-block;background:#eef4f3;border-radius:999px;padding:1px 9px;margin:2px 4px 2px 0;
white-space:nowrap}
footer{color:#64748b;font-size:12px;padding:6px 0 28px}
code{font-size:12px}
@container (max-width:600px){.o2{display:none}}
@container (max-width:420px){.o1{display:none}tbody th{max-width:112px}th,td{padding:4px 3px}table{font-size:12.5px}
thead th{letter-spacing:0}
.chart .lbl,.chart .val{font-size:14px}}
@media (max-width:560px){
.fv{font-size:22px}
.prov .k{display:block;min-width:0}
}
@media (prefers-color-scheme:dark){
body{background:#0e1418;color:#dbe3ea}
.fig,.card{background:#162027;box-shadow:none}
.fig.lead{background:#0f766e}
th,td,.prov li{border-color:#22313a}
.chart .lbl,.chart .tiny{fill:#b6c2cc}.chart .val{fill:#e6edf3}.chart .track{fill:#22313a}
.tag{background:#1f2d35}.note{background:#3a3120;border-color:#6b5a2e}
}
"""
