# schedstat of named threads: CPU time and run-queue wait over an interval.
import os, sys, time
pid=int(sys.argv[1]); dur=float(sys.argv[2])
def snap():
    d={}
    for t in os.listdir(f'/proc/{pid}/task'):
        try:
            comm=open(f'/proc/{pid}/task/{t}/comm').read().strip()
            a,b,c=map(int,open(f'/proc/{pid}/task/{t}/schedstat').read().split())
            d[t]=(comm,a,b,c)
        except Exception: pass
    return d
s0=snap(); time.sleep(dur); s1=snap()
agg={}
for t,(comm,a,b,c) in s1.items():
    if t not in s0: continue
    _,a0,b0,c0=s0[t]
    key=comm if not comm.startswith('rs-') else 'writers'
    x=agg.setdefault(key,[0,0,0,0]); x[0]+=(a-a0)/1e9; x[1]+=(b-b0)/1e9; x[2]+=c-c0; x[3]+=1
for k,v in sorted(agg.items(), key=lambda kv:-kv[1][0]):
    print(f"{k:20s} threads {v[3]:3d} cpu {v[0]:7.2f} s  runqueue wait {v[1]:7.2f} s  slices {v[2]}")
