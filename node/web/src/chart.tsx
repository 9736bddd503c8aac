// A live line chart (uPlot): `data` is [times in seconds, ...one array per series].
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

const COLOURS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea'];

export function Chart({ title, series, data, unit }: { title: string; series: string[]; data: number[][]; unit?: (v: number) => string }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | undefined>(undefined);
  useEffect(() => {
    const element = box.current;
    if (element === null) return;
    const width = () => Math.max(240, element.clientWidth);
    const format = unit ?? ((v: number) => String(Math.round(v * 10) / 10));
    plot.current = new uPlot(
      {
        width: width(),
        height: 160,
        legend: { show: true },
        cursor: { show: true },
        scales: { x: { time: true }, y: { range: (_u, min, max) => [Math.min(0, min), max > 0 ? max * 1.1 : 1] } },
        axes: [{}, { size: 64, values: (_u, ticks) => ticks.map(format) }],
        series: [{}, ...series.map((label, i) => ({ label, stroke: COLOURS[i % COLOURS.length], width: 1.5, value: (_u: uPlot, v: number | null) => (v === null ? '' : format(v)) }))],
      },
      data as uPlot.AlignedData,
      element,
    );
    const observer = new ResizeObserver(() => plot.current?.setSize({ width: width(), height: 160 }));
    observer.observe(element);
    return () => {
      observer.disconnect();
      plot.current?.destroy();
      plot.current = undefined;
    };
  }, []);
  useEffect(() => {
    plot.current?.setData(data as uPlot.AlignedData);
  }, [data]);
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      <div ref={box} role="img" aria-label={title} />
    </figure>
  );
}
