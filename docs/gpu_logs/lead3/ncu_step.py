import csv, collections, re, sys
rows=list(csv.reader(open(sys.argv[1])))
hdr=None; data=collections.OrderedDict()
for r in rows:
    if r and r[0]=='ID': hdr=r; continue
    if not hdr or len(r)!=len(hdr): continue
    d=dict(zip(hdr,r))
    k=int(d['ID'])
    e=data.setdefault(k,{'name':d['Kernel Name'],'grid':d['Grid Size'],'block':d['Block Size']})
    e[d['Metric Name']]=(d['Metric Value'],d['Metric Unit'])
ids=sorted(data)
names=[data[i]['name'] for i in ids]
ends=[j for j,n in enumerate(names) if 'argmax_pass2' in n]
U={'ns':1e-3,'nsecond':1e-3,'us':1,'usecond':1,'ms':1e3,'msecond':1e3,'byte':1,'B':1,'Kbyte':1e3,'KB':1e3,'Mbyte':1e6,'MB':1e6,'Gbyte':1e9,'GB':1e9}
def val(e,m):
    v,u=e[m]; v=float(v.replace(',',''))
    return v*U.get(u,1)
a,b=ends[-2]+1, ends[-1]+1
step=[data[ids[j]] for j in range(a,b)]
print('kernels in step', len(step))
tot=sum(val(e,'gpu__time_duration.sum') for e in step)
byt=sum(val(e,'dram__bytes_read.sum') for e in step)
print('sum of kernel durations us %.1f, dram bytes %.3f GB, -> %.2f TB/s'%(tot,byt/1e9,byt/tot/1e6))
fam=collections.OrderedDict()
def short(e): return re.sub(r'<.*','',e['name']).replace('void ','')
for e in step:
    n=short(e)
    if n.startswith('matvec1'):
        n+=' %s'%e['grid']
    f=fam.setdefault(n,[0,0.0,0.0])
    f[0]+=1; f[1]+=val(e,'gpu__time_duration.sum'); f[2]+=val(e,'dram__bytes_read.sum')
for n,(c,t,by) in sorted(fam.items(), key=lambda x:-x[1][1]):
    print('%-46s %4d %9.1f us %6.2f us/call %8.1f MB %6.2f TB/s'%(n[:46],c,t,t/c,by/1e6,by/t/1e6 if t else 0))
print()
for e in step[:int(sys.argv[2]) if len(sys.argv)>2 else 30]:
    print('%-30s grid %-14s %7.2f us %8.2f MB  %.2f TB/s regs %s'%(short(e)[:30], e['grid'], val(e,'gpu__time_duration.sum'), val(e,'dram__bytes_read.sum')/1e6, val(e,'dram__bytes_read.sum')/val(e,'gpu__time_duration.sum')/1e6, e.get('launch__registers_per_thread',('',''))[0]))
