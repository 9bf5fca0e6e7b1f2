# ncu_roles.py FILE.csv.gz...: isolated time per kernel role (q+k+v, o, gate+up pair, down, ...) of the last decode step in an ncu --csv capture of cuda_ops decode-profile (docs/bench_gpu.md, lead3 section).
import csv, collections, re, sys, gzip, io
def load(path):
    rows=list(csv.reader(io.TextIOWrapper(gzip.open(path),encoding='utf-8')))
    hdr=None; data=collections.OrderedDict()
    for r in rows:
        if r and r[0]=='ID': hdr=r; continue
        if not hdr or len(r)!=len(hdr): continue
        d=dict(zip(hdr,r)); k=int(d['ID'])
        e=data.setdefault(k,{'name':d['Kernel Name'],'grid':d['Grid Size']})
        e[d['Metric Name']]=(d['Metric Value'],d['Metric Unit'])
    ids=sorted(data); names=[data[i]['name'] for i in ids]
    ends=[j for j,n in enumerate(names) if 'argmax_pass2' in n]
    step=[data[ids[j]] for j in range(ends[-2]+1, ends[-1]+1)]
    return step
U={'ns':1e-3,'us':1,'ms':1e3}
def t(e): v,u=e['gpu__time_duration.sum']; return float(v.replace(',',''))*U[u]
def short(e): return re.sub(r'<.*','',e['name']).replace('void ','').split('(')[0]
for path in sys.argv[1:]:
    step=load(path)
    cls=collections.OrderedDict()
    prev=None; after_nan=0
    for i,e in enumerate(step):
        n=short(e)
        if n=='matvec1_kernel':
            # role by previous kernel
            p=short(step[i-1]) if i else ''
            pp=short(step[i-2]) if i>1 else ''
            if p=='attn_merge_kernel': role='o'
            elif p=='norm_add_norm_kernel' and short(step[i+1])=='matvec1_kernel' and e['grid'] in ('(1280, 1, 1)',) and short(step[i+2])=='norm_add_norm_kernel': role='pair'
            elif e['grid']=='(320, 1, 1)': role='ple_proj'
            elif p=='matvec1_kernel' and pp=='norm_add_norm_kernel' and short(step[i+1])=='norm_add_norm_kernel': role='down'
            elif short(step[i+1])=='norm_rope_store_kernel': role='qkv'
            elif e['grid']=='(256, 1, 1)': role='ple_gate'
            elif e['grid']=='(320, 1, 1)': role='ple_proj'
            elif e['grid']=='(32768, 1, 1)': role='head'
            else: role='other mv '+e['grid']
        else: role=n
        c=cls.setdefault(role,[0,0.0]); c[0]+=1; c[1]+=t(e)
    print(path)
    for k,(c,tt) in cls.items(): print('  %-28s %4d %8.1f us %6.2f each'%(k,c,tt,tt/c))
    print('  total %.1f'%sum(t(e) for e in step))
